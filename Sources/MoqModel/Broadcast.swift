// SPDX-License-Identifier: MIT

import MoqSync
public import MoqWire

/// A named collection of tracks published (or relayed) together.
///
/// Tracks are created up front (``createTrack(_:info:)``) or on demand through
/// ``onTrackRequest(_:)`` — the relay's hook for subscribing upstream only when a
/// subscriber asks. Thread-safe.
public final class BroadcastProducer: @unchecked Sendable {
    struct State {
        var route: AnnounceRoute
        var tracks: [ByteKey: TrackProducer] = [:]
        var requestHandler: (@Sendable (String) -> TrackProducer?)?
        var closed = false
        var closeHandlers: [@Sendable () -> Void] = []
    }

    /// The normalised broadcast path.
    public let path: String
    /// The clock its tracks use.
    public let clock: any MoqClock
    let state: Lock<State>

    public init(path: String, route: AnnounceRoute = AnnounceRoute(), clock: any MoqClock = SystemClock()) {
        self.path = BroadcastPath.normalize(path)
        self.clock = clock
        state = Lock(State(route: route))
    }

    /// The route the broadcast arrived by (empty for local broadcasts).
    public var route: AnnounceRoute { state.withLock { $0.route } }

    /// Replaces the route (the peer re-priced it); ``Origin/routeChanged(_:)`` tells observers.
    public func setRoute(_ route: AnnounceRoute) {
        state.withLock { $0.route = route }
    }

    /// The number of tracks held.
    public var trackCount: Int { state.withLock { $0.tracks.count } }

    /// Creates (or replaces) a track.
    @discardableResult
    public func createTrack(_ name: String, info: TrackInfo = TrackInfo(), limits: CacheLimits = CacheLimits())
        -> TrackProducer
    {
        let track = TrackProducer(name: name, info: info, clock: clock, limits: limits)
        let old = state.withLock { s -> TrackProducer? in
            let old = s.tracks[ByteKey(name)]
            s.tracks[ByteKey(name)] = track
            return old
        }
        old?.abort(.cancel)
        return track
    }

    /// Removes a track if it is the one given.
    public func removeTrack(_ track: TrackProducer) {
        state.withLock { s in
            if s.tracks[ByteKey(track.name)] === track { s.tracks[ByteKey(track.name)] = nil }
        }
    }

    /// Sets the handler that produces unknown tracks on demand (nil: unknown tracks are not found).
    public func onTrackRequest(_ handler: (@Sendable (String) -> TrackProducer?)?) {
        state.withLock { $0.requestHandler = handler }
    }

    /// The track with `name`: an existing live one, or one made by the request handler.
    public func track(_ name: String) -> TrackProducer? {
        let (existing, handler) = state.withLock { s -> (TrackProducer?, (@Sendable (String) -> TrackProducer?)?) in
            if let t = s.tracks[ByteKey(name)] {
                if case .aborted = t.end {
                    s.tracks[ByteKey(name)] = nil
                } else {
                    return (t, nil)
                }
            }
            return (nil, s.closed ? nil : s.requestHandler)
        }
        if let existing { return existing }
        guard let handler, let made = handler(name) else { return nil }
        return state.withLock { s in
            if let raced = s.tracks[ByteKey(name)] { return raced }
            s.tracks[ByteKey(name)] = made
            return made
        }
    }

    /// The track with `name` if it exists (never made on demand).
    public func existingTrack(_ name: String) -> TrackProducer? {
        state.withLock { $0.tracks[ByteKey(name)] }
    }

    /// The names of the tracks currently held.
    public var trackNames: [String] { state.withLock { $0.tracks.keys.map(\.string).sorted() } }

    /// True once closed.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `handler` when the broadcast closes (at once if already closed).
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { s -> Bool in
            if s.closed { return true }
            s.closeHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Ends the broadcast: tracks are finished (or aborted with `code`), and every
    /// origin holding it unannounces it.
    public func close(abort code: StreamErrorCode? = nil) {
        let (tracks, handlers) = state.withLock { s -> ([TrackProducer], [@Sendable () -> Void]) in
            guard !s.closed else { return ([], []) }
            s.closed = true
            let handlers = s.closeHandlers
            s.closeHandlers = []
            s.requestHandler = nil
            return (Array(s.tracks.values), handlers)
        }
        for t in tracks {
            if let code { t.abort(code) } else { t.finish() }
        }
        for h in handlers { h() }
    }
}

// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import MoqSession
import MoqSync
import MoqWire
import SwiftMoQ

/// A live broadcast yielded by a ``BroadcastSubscription`` (moq-kit's `Broadcast`).
///
/// ``catalogs()`` streams its media metadata; ``subscribeTrack(name:delivery:)`` reads any
/// track by name (chat, telemetry, app data). Both end when the broadcast is unannounced.
public final class Broadcast: Sendable {
    /// The path relative to the subscription's prefix.
    public let path: String
    /// The path relative to the session's root (what `moqsrc broadcast=` takes).
    public let absolutePath: String
    let session: MoqSession
    let url: String
    let options: SessionOptions
    /// The Session's connection, which Players of this broadcast share.
    let connection: ReconnectingSession?
    private let lifetime = Lifetime()

    init(
        path: String, absolutePath: String, session: MoqSession, url: String, options: SessionOptions,
        connection: ReconnectingSession?
    ) {
        self.path = path
        self.absolutePath = absolutePath
        self.session = session
        self.url = url
        self.options = options
        self.connection = connection
    }

    /// True once the broadcast was unannounced (or its session ended).
    public var hasEnded: Bool { lifetime.hasEnded }

    /// Catalog updates: each element replaces the previous one; the stream ends with the broadcast.
    /// Snapshots that cannot be used are left out (``catalogUpdates()`` says why).
    public func catalogs() -> AsyncStream<Catalog> {
        let (stream, continuation) = AsyncStream<Catalog>.makeStream(bufferingPolicy: .bufferingNewest(8))
        let updates = catalogUpdates()
        let task = Task {
            for await update in updates {
                if case .catalog(let catalog) = update { continuation.yield(catalog) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Catalog snapshots and what went wrong between them: a snapshot that could not be decoded
    /// (or exceeds ``BroadcastFollower/maxCatalogBytes``), or a catalog subscription that failed
    /// (it is made again while the broadcast is announced). Ends with the broadcast.
    public func catalogUpdates() -> AsyncStream<CatalogUpdate> {
        let (stream, continuation) = AsyncStream<CatalogUpdate>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let events = BroadcastFollower.catalogs(session, path: absolutePath)
        let task = Task {
            for await event in events {
                switch event {
                case .catalog(_, let raw): continuation.yield(.catalog(Catalog(raw, broadcast: self)))
                case .malformedCatalog(_, let error): continuation.yield(.malformed(error))
                case .catalogFailed(_, let error): continuation.yield(.failed(error))
                case .found, .ended, .notFound, .upcoming: break
                }
            }
            continuation.finish()
        }
        let token = lifetime.onEnd {
            task.cancel()
            continuation.finish()
        }
        continuation.onTermination = { [lifetime] _ in
            task.cancel()
            lifetime.remove(token)
        }
        return stream
    }

    /// The catalog once it has settled: the first snapshot offering both playable video and audio,
    /// else the latest one after `settle` without changes (publishers such as moqsink complete their
    /// catalog track by track as encoders start). Nil when none arrives within `timeout`.
    public func settledCatalog(
        settle: Duration = .milliseconds(500), timeout: Duration = .seconds(10)
    ) async -> Catalog? {
        let latest = LatestCatalog()
        let reader = Task {
            for await catalog in catalogs() {
                latest.set(catalog)
                if !catalog.playableVideoTracks.isEmpty && !catalog.playableAudioTracks.isEmpty { return }
            }
        }
        defer { reader.cancel() }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let (catalog, at) = latest.get() {
                let complete = !catalog.playableVideoTracks.isEmpty && !catalog.playableAudioTracks.isEmpty
                if complete || ContinuousClock.now - at >= settle { return catalog }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return latest.get()?.0
    }

    /// Subscribes to a track by name (it need not be in the catalog).
    /// - Parameter delivery: ``TrackDelivery/monotonic`` (groups in sequence order, late ones
    ///   skipped) or ``TrackDelivery/arrival`` (as they arrive; sequences may go backwards).
    public func subscribeTrack(name: String, delivery: TrackDelivery = .monotonic) -> TrackSubscription {
        let subscription = TrackSubscription(session: session, broadcast: absolutePath, name: name, delivery: delivery)
        let token = lifetime.onEnd { subscription.close() }
        subscription.onClose { [lifetime] in lifetime.remove(token) }
        return subscription
    }

    func end() { lifetime.end() }
}

/// A catalog snapshot, or why there is no new one (``Broadcast/catalogUpdates()``).
public enum CatalogUpdate: Sendable {
    /// A complete catalog: it replaces the previous one.
    case catalog(Catalog)
    /// A snapshot could not be used (malformed JSON, a wrong field, too large); the previous one holds.
    case malformed(String)
    /// The catalog subscription failed (it is made again while the broadcast is announced).
    case failed(String)
}

/// The newest catalog seen and when.
private final class LatestCatalog: Sendable {
    private let value = Lock<(Catalog, ContinuousClock.Instant)?>(nil)
    func set(_ catalog: Catalog) { value.withLock { $0 = (catalog, .now) } }
    func get() -> (Catalog, ContinuousClock.Instant)? { value.withLock { $0 } }
}

/// Ends a broadcast's streams when it is unannounced.
final class Lifetime: Sendable {
    private struct State {
        var ended = false
        var handlers: [Int: @Sendable () -> Void] = [:]
        var next = 0
    }
    private let state = Lock(State())

    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Runs `handler` at the end (at once if already ended); returns a token for ``remove(_:)``.
    func onEnd(_ handler: @escaping @Sendable () -> Void) -> Int {
        let (token, runNow) = state.withLock { s -> (Int, Bool) in
            if s.ended { return (-1, true) }
            let id = s.next
            s.next += 1
            s.handlers[id] = handler
            return (id, false)
        }
        if runNow { handler() }
        return token
    }

    func remove(_ token: Int) { _ = state.withLock { $0.handlers.removeValue(forKey: token) } }

    func end() {
        let handlers = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.ended else { return [] }
            s.ended = true
            defer { s.handlers = [:] }
            return Array(s.handlers.values)
        }
        for handler in handlers { handler() }
    }
}

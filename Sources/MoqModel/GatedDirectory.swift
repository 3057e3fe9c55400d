// SPDX-License-Identifier: MIT
import MoqSync
package import MoqWire

/// A directory that shows nothing until it is opened, then everything its inner directory has.
///
/// What a connection attempt serves while it races another: an `https://` URL tries WebTransport
/// and WebSocket, and the losing attempt is already a session at the relay when it is closed. Had it
/// served the origin, it would announce the publisher's broadcasts too; a relay takes a second
/// session of the same grant announcing a path for a publisher that came back, and moves the
/// broadcast to it — so the loser's close then unannounced a broadcast whose publisher was still
/// connected (a subscriber that had seen it announced was refused as "unknown broadcast").
///
/// While closed: no broadcast is found, observations are remembered and see nothing. ``open()``
/// registers them with the inner directory and delivers what it holds as announcements, in order
/// with the changes that follow (a change that comes during that replay waits behind it).
package final class GatedDirectory: BroadcastDirectory, @unchecked Sendable {  // state under `state`'s lock
    let inner: any BroadcastDirectory

    private struct Observation {
        let prefix: String
        let handler: @Sendable (OriginEvent) -> Void
        /// The inner directory's token, once registered there.
        var innerToken: UInt64?
        /// Changes that came while the snapshot was being replayed (nil: deliver at once).
        var held: [OriginEvent]?
    }

    private struct State {
        var isOpen = false
        var nextToken: UInt64 = 1
        var observations: [UInt64: Observation] = [:]
    }

    private let state = Lock(State())

    package init(_ inner: any BroadcastDirectory) { self.inner = inner }

    /// Whether ``open()`` was called.
    package var isOpen: Bool { state.withLock { $0.isOpen } }

    package func broadcast(_ path: String) -> BroadcastProducer? {
        state.withLock { $0.isOpen } ? inner.broadcast(path) : nil
    }

    package func observe(prefix: String, _ handler: @escaping @Sendable (OriginEvent) -> Void)
        -> (token: UInt64, current: [(path: String, route: AnnounceRoute)])
    {
        let (token, isOpen) = state.withLock { s -> (UInt64, Bool) in
            let token = s.nextToken
            s.nextToken += 1
            s.observations[token] = Observation(prefix: prefix, handler: handler, held: s.isOpen ? nil : [])
            return (token, s.isOpen)
        }
        guard isOpen else { return (token, []) }
        let (innerToken, current) = inner.observe(prefix: prefix, handler)
        register(token, innerToken: innerToken)
        return (token, current)
    }

    package func stopObserving(_ token: UInt64) {
        let removed = state.withLock { $0.observations.removeValue(forKey: token) }
        if let innerToken = removed?.innerToken { inner.stopObserving(innerToken) }
    }

    /// Shows the inner directory: every observation made so far gets what it holds now, then its changes.
    package func open() {
        let waiting = state.withLock { s -> [UInt64] in
            guard !s.isOpen else { return [] }
            s.isOpen = true
            return s.observations.keys.sorted()
        }
        for token in waiting {
            guard let prefix = state.withLock({ $0.observations[token]?.prefix }) else { continue }
            let (innerToken, current) = inner.observe(prefix: prefix) { [weak self] event in
                self?.deliver(event, to: token)
            }
            guard register(token, innerToken: innerToken) else { continue }
            var pending = current.map { OriginEvent.announced(path: $0.path, route: $0.route) }
            // Deliver the snapshot, then whatever came meanwhile, until nothing is held (then changes
            // go straight to the handler).
            while true {
                if !pending.isEmpty, let handler = state.withLock({ $0.observations[token]?.handler }) {
                    for event in pending { handler(event) }
                }
                pending = state.withLock { s -> [OriginEvent] in
                    let held = s.observations[token]?.held ?? []
                    s.observations[token]?.held = held.isEmpty ? nil : []
                    return held
                }
                if pending.isEmpty { break }
            }
        }
    }

    /// Records the inner token; false (and the inner observation ended) when `token` was stopped meanwhile.
    @discardableResult
    private func register(_ token: UInt64, innerToken: UInt64) -> Bool {
        let kept = state.withLock { s -> Bool in
            guard s.observations[token] != nil else { return false }
            s.observations[token]?.innerToken = innerToken
            return true
        }
        if !kept { inner.stopObserving(innerToken) }
        return kept
    }

    private func deliver(_ event: OriginEvent, to token: UInt64) {
        let handler = state.withLock { s -> (@Sendable (OriginEvent) -> Void)? in
            guard let observation = s.observations[token] else { return nil }
            if observation.held != nil {
                s.observations[token]?.held?.append(event)
                return nil
            }
            return observation.handler
        }
        handler?(event)
    }
}

// SPDX-License-Identifier: MIT

import MoqSync
public import MoqWire

/// A change in the set of broadcasts an ``Origin`` offers.
public enum OriginEvent: Sendable, Equatable {
    /// A broadcast became available (or its route changed).
    case announced(path: String, route: AnnounceRoute)
    /// A broadcast went away.
    case unannounced(path: String)
}

/// The broadcasts a session (or a relay) offers, by path, with announcement
/// observers per prefix. Thread-safe.
public final class Origin: @unchecked Sendable {
    struct Observer {
        let prefix: String
        let handler: @Sendable (OriginEvent) -> Void
    }

    struct State {
        var broadcasts: [ByteKey: BroadcastProducer] = [:]
        /// Who published each path (absent: the origin's own, which anyone may replace).
        var owners: [ByteKey: String] = [:]
        var observers: [UInt64: Observer] = [:]
        var nextID: UInt64 = 0
    }

    let state = Lock(State())

    public init() {}

    /// Publishes `broadcast` under its path, replacing any broadcast already there.
    /// Closing the broadcast unpublishes it.
    public func publish(_ broadcast: BroadcastProducer) {
        _ = publish(broadcast, owner: nil)
    }

    /// Publishes `broadcast` for `owner` (nil: the origin's own). A path published by another
    /// owner is not taken over: the call returns false and nothing changes. The same owner (a
    /// publisher that reconnected with the same grant) replaces its own broadcast.
    @discardableResult
    public func publish(_ broadcast: BroadcastProducer, owner: String?) -> Bool {
        let observers = state.withLock { s -> [Observer]? in
            let key = ByteKey(broadcast.path)
            if s.broadcasts[key] != nil, let held = s.owners[key], held != owner { return nil }
            s.broadcasts[key] = broadcast
            s.owners[key] = owner
            return Array(s.observers.values)
        }
        guard let observers else { return false }
        notify(observers, .announced(path: broadcast.path, route: broadcast.route))
        // Weak: the handler is stored in the broadcast itself (a strong capture would be a cycle).
        broadcast.onClose { [weak self, weak broadcast] in
            if let broadcast { self?.unpublish(broadcast) }
        }
        return true
    }

    /// Who published the broadcast at `path`, if an owner was given.
    public func owner(of path: String) -> String? {
        let key = ByteKey(BroadcastPath.normalize(path))
        return state.withLock { $0.owners[key] }
    }

    /// Tells observers that the route of `broadcast` changed (if it is the one published at its path).
    public func routeChanged(_ broadcast: BroadcastProducer) {
        let observers = state.withLock { s -> [Observer]? in
            guard s.broadcasts[ByteKey(broadcast.path)] === broadcast else { return nil }
            return Array(s.observers.values)
        }
        if let observers { notify(observers, .announced(path: broadcast.path, route: broadcast.route)) }
    }

    /// Removes `broadcast` if it is the one published at its path.
    public func unpublish(_ broadcast: BroadcastProducer) {
        let observers = state.withLock { s -> [Observer]? in
            let key = ByteKey(broadcast.path)
            guard s.broadcasts[key] === broadcast else { return nil }
            s.broadcasts[key] = nil
            s.owners[key] = nil
            return Array(s.observers.values)
        }
        if let observers { notify(observers, .unannounced(path: broadcast.path)) }
    }

    /// The broadcast at `path` (normalised), if published.
    public func broadcast(_ path: String) -> BroadcastProducer? {
        let key = ByteKey(BroadcastPath.normalize(path))
        return state.withLock { $0.broadcasts[key] }
    }

    /// All published paths, sorted.
    public var paths: [String] { state.withLock { $0.broadcasts.keys.map(\.string).sorted() } }

    /// Observes announcements under `prefix` (per segment). Returns the broadcasts
    /// currently published there and a token; `handler` gets every later change, on
    /// the thread that made it. The snapshot and the registration are atomic.
    public func observe(prefix: String, _ handler: @escaping @Sendable (OriginEvent) -> Void)
        -> (token: UInt64, current: [(path: String, route: AnnounceRoute)])
    {
        state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.observers[id] = Observer(prefix: BroadcastPath.normalize(prefix), handler: handler)
            let current = s.broadcasts.values
                .filter { BroadcastPath.hasPrefix($0.path, prefix) }
                .sorted { $0.path < $1.path }
                .map { (path: $0.path, route: $0.route) }
            return (id, current)
        }
    }

    /// Stops an observation.
    public func stopObserving(_ token: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: token) }
    }

    private func notify(_ observers: [Observer], _ event: OriginEvent) {
        let path: String
        switch event {
        case .announced(let p, _), .unannounced(let p): path = p
        }
        for o in observers where BroadcastPath.hasPrefix(path, o.prefix) { o.handler(event) }
    }
}

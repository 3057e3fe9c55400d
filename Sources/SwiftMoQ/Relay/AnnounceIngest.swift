// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync
import MoqWire
import MoqtSession

/// Takes what a peer announces and reports it to the relay's ``RelayRoutes`` as routes through
/// that peer's session: a publisher's broadcasts (owned by its grant), or another relay's (a peer
/// link or an upstream, owned by nobody: they compete by cost). Tracks are subscribed through the
/// session of the best route, on demand.
final class AnnounceIngest: @unchecked Sendable {
    /// The route's session: tracks are pulled through it.
    let session: any UpstreamSession
    /// Asks the peer for everything it announces, reporting to the handler (on the session's loop).
    private let subscribeAnnounces: (@escaping (AnnounceEvent) -> Void) -> Void
    let routes: RelayRoutes
    let hopID: UInt64
    let logger: MoqLogger
    let label: String
    /// Maps a path announced by the peer to the relay's path, or nil to refuse it.
    let map: @Sendable (String) -> String?
    /// Who owns what this peer announces (its grant), or nil for a relay's link that claims
    /// nothing (its routes compete with others by cost).
    let owner: String?
    /// Called when the peer announces a path another owner holds.
    let takeoverRefused: @Sendable (String) -> Void

    private struct State {
        /// The relay's paths by the peer's (relative) path.
        var paths: [ByteKey: String] = [:]
        var closed = false
    }

    private let state = Lock(State())

    /// What a moq-lite session announces (ANNOUNCE_PLEASE for everything).
    convenience init(
        session: MoqSession, routes: RelayRoutes, hopID: UInt64, logger: MoqLogger, label: String,
        owner: String? = nil, takeoverRefused: @escaping @Sendable (String) -> Void = { _ in },
        map: @escaping @Sendable (String) -> String?
    ) {
        let conn = session.connection
        self.init(
            upstream: session, routes: routes, hopID: hopID, logger: logger, label: label, owner: owner,
            takeoverRefused: takeoverRefused, map: map
        ) { handler in
            guard let core = conn.value.core, !core.isClosed else { return handler(.closed(nil)) }
            _ = core.requestAnnounces(prefix: "", handler: handler)
        }
    }

    /// What an IETF session publishes (its PUBLISH_NAMESPACEs, and SUBSCRIBE_NAMESPACE for everything):
    /// a publisher's own broadcasts, so each is a direct route.
    convenience init(
        ietf session: IETFSession, routes: RelayRoutes, hopID: UInt64, logger: MoqLogger, label: String,
        owner: String?, takeoverRefused: @escaping @Sendable (String) -> Void,
        map: @escaping @Sendable (String) -> String?
    ) {
        let endpoint = session.connection
        self.init(
            upstream: session, routes: routes, hopID: hopID, logger: logger, label: label, owner: owner,
            takeoverRefused: takeoverRefused, map: map
        ) { handler in
            guard let core = endpoint.moqtCore, !core.isClosed else { return handler(.closed(nil)) }
            _ = endpoint.addCloseHandler { handler(.closed(nil)) }
            // A refused or ended namespace subscription: what it publishes unsolicited still comes.
            let report: (MoqtNamespaceEvent) -> Void = { event in if let a = event.announcement { handler(a) } }
            // Unsolicited PUBLISH_NAMESPACEs (ours, to a peer without SOLICIT), and answers to
            // SUBSCRIBE_NAMESPACE (moq-dev's, which publishes only when asked).
            core.observePeerNamespaces(report)
            core.subscribeNamespace(prefix: "", handler: report)
        }
    }

    init(
        upstream: any UpstreamSession, routes: RelayRoutes, hopID: UInt64, logger: MoqLogger, label: String,
        owner: String?, takeoverRefused: @escaping @Sendable (String) -> Void,
        map: @escaping @Sendable (String) -> String?,
        subscribeAnnounces: @escaping (@escaping (AnnounceEvent) -> Void) -> Void
    ) {
        self.owner = owner
        self.takeoverRefused = takeoverRefused
        self.session = upstream
        self.subscribeAnnounces = subscribeAnnounces
        self.routes = routes
        self.hopID = hopID
        self.logger = logger
        self.label = label
        self.map = map
    }

    /// Asks the peer for everything it announces (call once).
    func start() {
        let box = LoopBound(self)
        session.loop.execute {
            let me = box.value
            me.subscribeAnnounces { [me] event in me.handle(event) }
        }
    }

    private func handle(_ event: AnnounceEvent) {
        switch event {
        case .active(let path, let route):
            if route.hops.contains(hopID) {
                logger.debug("\(label): ignoring \(path): its route passes through this relay")
                return
            }
            guard let full = map(path) else {
                logger.warning("\(label): refused to relay '\(path)': not allowed to publish there")
                return
            }
            let known = state.withLock { s -> Bool? in
                guard !s.closed else { return nil }
                let known = s.paths[ByteKey(path)] != nil
                s.paths[ByteKey(path)] = full
                return known
            }
            guard let known else { return }
            switch routes.announce(full, from: self, peerPath: path, route: route) {
            case .accepted:
                if !known {
                    logger.info("\(label): announced \(full) (cost \(route.costWarm), \(route.hops.count) hops)")
                }
            case .refused:
                _ = state.withLock { $0.paths.removeValue(forKey: ByteKey(path)) }
                logger.warning("\(label): refused to announce \(full): another session publishes it")
                takeoverRefused(full)
            }
        case .ended(let path):
            guard let full = state.withLock({ $0.paths.removeValue(forKey: ByteKey(path)) }) else { return }
            // Unannounced: no new subscribers through here; current ones keep their upstream tracks
            // (or move to another route).
            routes.withdraw(full, from: self, sessionGone: false)
            logger.info("\(label): unannounced \(full)")
        case .closed:
            close()
        }
    }

    /// The peer said GOAWAY: its routes become the dearest, and tracks pulled through it move to
    /// other routes while its session still carries them.
    func drain() {
        let moved = routes.drain(self)
        if moved > 0 { logger.info("\(label): GOAWAY: \(moved) track(s) moved to other routes") }
    }

    /// The peer went away: its routes are withdrawn; broadcasts with no other route end, and
    /// their subscribers are reset with INTERNAL (as moq-relay does).
    func close() {
        let wasOpen = state.withLock { s -> Bool in
            defer {
                s.closed = true
                s.paths = [:]
            }
            return !s.closed
        }
        guard wasOpen else { return }
        let count = routes.withdrawAll(from: self)
        if count > 0 { logger.info("\(label): \(count) route(s) withdrawn") }
    }
}

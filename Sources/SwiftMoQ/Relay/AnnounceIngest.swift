// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync
import MoqWire

/// Takes what a peer announces and offers it in the relay's origin: each announced
/// broadcast becomes a ``BroadcastProducer`` whose tracks are subscribed through
/// that peer's session on demand — one upstream subscription per track, shared by
/// every downstream subscriber, torn down shortly after the last one leaves.
final class AnnounceIngest: @unchecked Sendable {
    /// How long an unused upstream subscription lingers (a TRACK request is usually
    /// followed by a SUBSCRIBE for the same track a moment later).
    static let linger = Duration.seconds(2)
    /// Unannounced broadcasts kept for the readers of their tracks, at most.
    static let maxRetired = 256
    /// Tracks one relayed broadcast may have subscribed upstream on demand (each TRACK or
    /// SUBSCRIBE for a new name would otherwise make one): more are not found.
    static let maxTracksPerBroadcast = 1024

    let session: MoqSession
    let origin: Origin
    let hopID: UInt64
    let upstreamRange: SubscriptionRange
    let cacheLimits: CacheLimits
    let logger: MoqLogger
    let label: String
    /// Maps a path announced by the peer to the relay's path, or nil to refuse it.
    let map: @Sendable (String) -> String?
    /// Who owns what this peer announces (its grant), or nil for a link that claims nothing
    /// (the upstream relay: a local publisher's broadcast wins over a route through it).
    let owner: String?
    /// Called when the peer announces a path another owner holds.
    let takeoverRefused: @Sendable (String) -> Void

    private struct State {
        /// Broadcasts by the peer's (relative) path.
        var broadcasts: [ByteKey: BroadcastProducer] = [:]
        /// Unannounced broadcasts whose tracks may still be read.
        var retired: [BroadcastProducer] = []
        var upstreams: [ObjectIdentifier: UpstreamDemand] = [:]
        var closed = false
        /// When the per-broadcast track limit was last logged (at most once a second).
        var lastTrackLimitLog: ContinuousClock.Instant?
    }

    private let state = Lock(State())

    init(
        session: MoqSession, origin: Origin, hopID: UInt64, upstreamRange: SubscriptionRange, cacheLimits: CacheLimits,
        logger: MoqLogger, label: String, owner: String? = nil,
        takeoverRefused: @escaping @Sendable (String) -> Void = { _ in },
        map: @escaping @Sendable (String) -> String?
    ) {
        self.owner = owner
        self.takeoverRefused = takeoverRefused
        self.session = session
        self.origin = origin
        self.hopID = hopID
        self.upstreamRange = upstreamRange
        self.cacheLimits = cacheLimits
        self.logger = logger
        self.label = label
        self.map = map
    }

    /// Asks the peer for everything it announces (call once).
    func start() {
        let conn = session.connection
        session.loop.execute { [self] in
            guard let core = conn.value.core, !core.isClosed else { return close() }
            core.requestAnnounces(prefix: "") { [self] event in handle(event) }
        }
    }

    /// Number of upstream subscriptions open.
    var upstreamCount: Int { state.withLock { $0.upstreams.count } }

    /// The latency budgets asked upstream, in ms (tests).
    var upstreamBudgetsMs: [UInt64] { state.withLock { $0.upstreams.values.map(\.budgetMs) } }

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
            if let existing = state.withLock({ $0.closed ? nil : $0.broadcasts[ByteKey(path)] }) {
                // A new route or cost for a broadcast we relay: same producer, observers hear an update.
                existing.setRoute(route)
                origin.routeChanged(existing)
                return
            }
            let broadcast = BroadcastProducer(path: full, route: route)
            let added = state.withLock { s -> Bool in
                guard !s.closed else { return false }
                s.broadcasts[ByteKey(path)] = broadcast
                return true
            }
            guard added else { return }
            broadcast.onTrackRequest { [weak self, weak broadcast] name in
                guard let self, let broadcast else { return nil }
                return self.makeTrack(name, peerPath: path, broadcast: broadcast)
            }
            guard origin.publish(broadcast, owner: owner) else {
                _ = state.withLock { $0.broadcasts.removeValue(forKey: ByteKey(path)) }
                logger.warning("\(label): refused to announce \(full): another session publishes it")
                takeoverRefused(full)
                return
            }
            logger.info("\(label): announced \(full)")
        case .ended(let path):
            guard
                let (broadcast, expired) = state.withLock({ s -> (BroadcastProducer, [BroadcastProducer])? in
                    guard let b = s.broadcasts.removeValue(forKey: ByteKey(path)) else { return nil }
                    // Retired broadcasts stay only while their tracks are read, and at most
                    // `maxRetired` of them (a peer announcing and unannouncing in a loop).
                    s.retired.removeAll { $0.trackCount == 0 }
                    s.retired.append(b)
                    let excess = max(0, s.retired.count - Self.maxRetired)
                    let expired = Array(s.retired.prefix(excess))
                    s.retired.removeFirst(excess)
                    return (b, expired)
                })
            else { return }
            for old in expired { old.close(abort: .internal) }
            // Unannounced: no new subscribers; current ones keep their upstream tracks.
            origin.unpublish(broadcast)
            logger.info("\(label): unannounced \(broadcast.path)")
        case .closed:
            close()
        }
    }

    /// A track of `broadcast`, subscribed through the peer's session.
    private func makeTrack(_ name: String, peerPath: String, broadcast: BroadcastProducer) -> TrackProducer? {
        guard !state.withLock({ $0.closed }) else { return nil }
        guard broadcast.trackCount < Self.maxTracksPerBroadcast else {
            let now = ContinuousClock.now
            let log = state.withLock { s -> Bool in
                guard s.lastTrackLimitLog.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
                s.lastTrackLimitLog = now
                return true
            }
            if log {
                logger.warning(
                    "\(label): \(broadcast.path) has \(Self.maxTracksPerBroadcast) tracks subscribed upstream: '\(name)' refused"
                )
            }
            return nil
        }
        let track = TrackProducer(name: name, info: nil, clock: SystemClock(), limits: cacheLimits)
        let loop = session.loop
        let upstream = UpstreamDemand(
            session: session, peerPath: peerPath, track: track, defaultRange: upstreamRange)
        state.withLock { $0.upstreams[ObjectIdentifier(track)] = upstream }
        // Subscribed at once with the default range (a TRACK request needs the upstream's info, and
        // a publisher keeps only so much: waiting for a subscriber's range lost moq-rs publishers'
        // first groups under load); the first subscriber's budget follows as SUBSCRIBE_UPDATE (as
        // moq-relay forwards its subscribers' preferences), and later ones raise it.
        track.onDemand { range in upstream.demand(range) }
        upstream.demand(nil)
        logger.debug("\(label): subscribed upstream to \(broadcast.path)/\(name)")
        let weakTrack = WeakReference(track)
        let weakBroadcast = WeakReference(broadcast)
        let weakSelf = WeakReference(self)
        track.onUnused {
            _ = loop.schedule(after: Self.linger) {
                guard let self = weakSelf.value, let track = weakTrack.value, track.observerCount == 0 else { return }
                let broadcast = weakBroadcast.value
                let remote = self.state.withLock { $0.upstreams.removeValue(forKey: ObjectIdentifier(track)) }
                remote?.cancel()
                broadcast?.removeTrack(track)
                self.logger.debug("\(self.label): last subscriber left \(track.name): upstream subscription closed")
            }
        }
        return track
    }

    /// The peer went away: every broadcast it announced ends, and subscribers are
    /// reset with INTERNAL (as moq-relay does).
    func close() {
        let (all, upstreams) = state.withLock { s -> ([BroadcastProducer], [UpstreamDemand]) in
            guard !s.closed else { return ([], []) }
            s.closed = true
            let all = Array(s.broadcasts.values) + s.retired
            s.broadcasts = [:]
            s.retired = []
            let ups = Array(s.upstreams.values)
            s.upstreams = [:]
            return (all, ups)
        }
        for b in all {
            origin.unpublish(b)
            b.close(abort: .internal)
        }
        for r in upstreams { r.cancel() }
        if !all.isEmpty { logger.info("\(label): \(all.count) broadcast(s) ended") }
    }
}

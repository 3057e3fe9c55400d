// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync
import MoqWire

/// Every route the relay knows to each broadcast, and the one broadcast per path it offers for
/// them: a local publisher's session, a peer relay's link, an upstream relay are all routes
/// (``AnnounceIngest`` reports them). The best (``RouteChoice``) is announced to everyone else and
/// pulled from: one upstream subscription per track, whatever the number of subscribers. When
/// the route a track is pulled through goes, the track moves to the next best and its readers
/// see no end (the group in flight may be lost); when the last one goes, the broadcast ends.
final class RelayRoutes: @unchecked Sendable {
    /// Unannounced broadcasts kept for the readers of their tracks, at most.
    static let maxRetired = 256
    /// Tracks one relayed broadcast may have subscribed upstream on demand (each TRACK or
    /// SUBSCRIBE for a new name would otherwise make one): more are not found.
    static let maxTracksPerBroadcast = 1024
    /// How long an unused upstream subscription lingers (a TRACK request is usually followed by a
    /// SUBSCRIBE for the same track a moment later).
    static let linger = Duration.seconds(2)
    /// A track reset by its upstream moves to another route at most this often within
    /// ``failoverWindow`` (two relays each pointing at the other for a moment would otherwise bounce
    /// it until their announcements settle); past that it ends with the upstream's code.
    static let maxFailovers = 5
    static let failoverWindow = Duration.seconds(10)

    /// One route to a broadcast: the peer that offers it and the path it uses there.
    struct Source: Sendable {
        let ingest: AnnounceIngest
        let peerPath: String
        var route: AnnounceRoute
        /// When it was learnt (larger: newer).
        let serial: UInt64

        var candidate: RouteChoice.Candidate { RouteChoice.Candidate(route: route, serial: serial) }
    }

    /// One relayed track and the subscription feeding it (its fields change under the routes' lock).
    final class Feed: @unchecked Sendable {
        let track: WeakReference<TrackProducer>
        var upstream: UpstreamDemand
        /// The source it is pulled through (its serial).
        var source: UInt64
        var ingest: ObjectIdentifier
        /// When a reset moved it to another route (within ``failoverWindow``).
        var failovers: [ContinuousClock.Instant] = []

        init(track: TrackProducer, upstream: UpstreamDemand, source: Source) {
            self.track = WeakReference(track)
            self.upstream = upstream
            self.source = source.serial
            ingest = ObjectIdentifier(source.ingest)
        }
    }

    /// A broadcast offered for its routes (its fields change under the routes' lock).
    final class Entry: @unchecked Sendable {
        let path: String
        let broadcast: BroadcastProducer
        var sources: [Source] = []
        /// The serial of the route announced and pulled from by new tracks.
        var best: UInt64?
        var feeds: [ObjectIdentifier: Feed] = [:]

        init(path: String, broadcast: BroadcastProducer) {
            self.path = path
            self.broadcast = broadcast
        }

        var bestSource: Source? { sources.first { $0.serial == best } }

        /// Chooses again; returns true when the announced route changed.
        func choose() -> Bool {
            let before = bestSource?.route
            best = RouteChoice.best(sources.map(\.candidate), path: path).map { sources[$0].serial }
            return bestSource?.route != before
        }
    }

    /// What a route's arrival did.
    enum Outcome: Equatable {
        /// Offered (a new broadcast, another route to it, or a new cost).
        case accepted
        /// Another owner publishes this path.
        case refused
    }

    private struct State {
        var entries: [ByteKey: Entry] = [:]
        var retired: [Entry] = []
        var nextSerial: UInt64 = 0
        var closed = false
        /// When the per-broadcast track limit was last logged (at most once a second).
        var lastTrackLimitLog: ContinuousClock.Instant?
    }

    let origin: Origin
    let upstreamRange: SubscriptionRange
    let cacheLimits: CacheLimits
    let logger: MoqLogger
    private let state = Lock(State())

    init(origin: Origin, upstreamRange: SubscriptionRange, cacheLimits: CacheLimits, logger: MoqLogger) {
        self.origin = origin
        self.upstreamRange = upstreamRange
        self.cacheLimits = cacheLimits
        self.logger = logger
    }

    // MARK: Routes

    /// `ingest` offers `path` (the relay's full path) as `peerPath` with `route`, or changed its route.
    func announce(_ path: String, from ingest: AnnounceIngest, peerPath: String, route: AnnounceRoute) -> Outcome {
        enum Step {
            case refused
            case publish(Entry, expired: [Entry])
            case reroute(Entry, routeChanged: Bool)
            case none
        }
        let step = state.withLock { s -> Step in
            guard !s.closed else { return .none }
            let key = ByteKey(path)
            guard let entry = s.entries[key] else {
                let entry = Entry(path: path, broadcast: BroadcastProducer(path: path, route: route))
                entry.sources = [Source(ingest: ingest, peerPath: peerPath, route: route, serial: s.nextSerial)]
                s.nextSerial += 1
                _ = entry.choose()
                s.entries[key] = entry
                return .publish(entry, expired: [])
            }
            if let i = entry.sources.firstIndex(where: { $0.ingest === ingest }) {
                entry.sources[i].route = route
                return .reroute(entry, routeChanged: entry.choose())
            }
            let source = Source(ingest: ingest, peerPath: peerPath, route: route, serial: s.nextSerial)
            s.nextSerial += 1
            if let owner = ingest.owner {
                // A publisher's broadcast is its own: another grant may not take it over.
                if entry.sources.contains(where: { $0.ingest.owner.map { $0 != owner } ?? false }) {
                    return .refused
                }
                if entry.sources.contains(where: { $0.ingest.owner == owner }) {
                    // The same grant again: a publisher that came back in a new session, whose groups
                    // may start again from 0. A new broadcast for it (its other routes go along); the
                    // old one's readers read on until the old session ends, as they would have.
                    let fresh = Entry(path: path, broadcast: BroadcastProducer(path: path, route: route))
                    fresh.sources = entry.sources.filter { $0.ingest.owner != owner } + [source]
                    _ = fresh.choose()
                    entry.sources = []
                    s.entries[key] = fresh
                    return .publish(fresh, expired: Self.retire(entry, in: &s))
                }
            }
            entry.sources.append(source)
            return .reroute(entry, routeChanged: entry.choose())
        }
        switch step {
        case .none:
            return .accepted
        case .refused:
            return .refused
        case .publish(let entry, let expired):
            for old in expired { end(old) }
            let box = WeakReference(self)
            let weakEntry = WeakReference(entry)
            entry.broadcast.onTrackRequest { name in
                guard let self = box.value, let entry = weakEntry.value else { return nil }
                return self.makeTrack(name, entry: entry)
            }
            origin.publish(entry.broadcast, owner: nil)
            return .accepted
        case .reroute(let entry, let routeChanged):
            if routeChanged, let route = state.withLock({ _ in entry.bestSource?.route }) {
                entry.broadcast.setRoute(route)
                origin.routeChanged(entry.broadcast)
            }
            return .accepted
        }
    }

    /// `ingest` no longer offers `path`: the next best route takes over; with none left the
    /// broadcast is unannounced, its tracks read on until their subscription ends (`sessionGone`:
    /// the peer went away, and they end with INTERNAL at once, as moq-relay resets them).
    func withdraw(_ path: String, from ingest: AnnounceIngest, sessionGone: Bool) {
        enum Step {
            case none
            case reroute(Entry, routeChanged: Bool, moves: [Feed])
            case unpublish(Entry, expired: [Entry])
        }
        let step = state.withLock { s -> Step in
            let key = ByteKey(path)
            guard let entry = s.entries[key], let i = entry.sources.firstIndex(where: { $0.ingest === ingest })
            else { return .none }
            let serial = entry.sources.remove(at: i).serial
            guard entry.sources.isEmpty else {
                let changed = entry.choose()
                return .reroute(entry, routeChanged: changed, moves: entry.feeds.values.filter { $0.source == serial })
            }
            s.entries[key] = nil
            guard !sessionGone else { return .unpublish(entry, expired: [entry]) }
            return .unpublish(entry, expired: Self.retire(entry, in: &s))
        }
        switch step {
        case .none:
            return
        case .reroute(let entry, let routeChanged, let moves):
            if routeChanged, let route = state.withLock({ _ in entry.bestSource?.route }) {
                entry.broadcast.setRoute(route)
                origin.routeChanged(entry.broadcast)
            }
            move(moves, of: entry)
        case .unpublish(let entry, let expired):
            origin.unpublish(entry.broadcast)
            for old in expired { end(old) }
            logger.info("unannounced \(entry.path)")
        }
    }

    /// The peer behind `ingest` is leaving (GOAWAY): its routes are priced at the most a route can
    /// cost, as moq-relay re-prices them, and the tracks pulled through them move now, while its
    /// session still carries them, wherever another route exists. Returns the tracks moved.
    @discardableResult
    func drain(_ ingest: AnnounceIngest) -> Int {
        let work = state.withLock { s -> [(Entry, Bool, [Feed])] in
            var work: [(Entry, Bool, [Feed])] = []
            for entry in s.entries.values {
                var leaving: Set<UInt64> = []
                for i in entry.sources.indices where entry.sources[i].ingest === ingest {
                    entry.sources[i].route.costWarm = VarInt.max
                    entry.sources[i].route.costCold = VarInt.max
                    leaving.insert(entry.sources[i].serial)
                }
                guard !leaving.isEmpty else { continue }
                let changed = entry.choose()
                guard let best = entry.best, !leaving.contains(best) else {
                    if changed { work.append((entry, true, [])) }
                    continue
                }
                work.append((entry, changed, entry.feeds.values.filter { leaving.contains($0.source) }))
            }
            return work
        }
        var moved = 0
        for (entry, changed, feeds) in work {
            if changed, let route = state.withLock({ _ in entry.bestSource?.route }) {
                entry.broadcast.setRoute(route)
                origin.routeChanged(entry.broadcast)
            }
            move(feeds, of: entry)
            moved += feeds.count
        }
        return moved
    }

    /// Keeps `entry` for the readers of its tracks. Retired broadcasts stay only while their tracks
    /// are read, and at most `maxRetired` of them (a peer announcing and unannouncing in a loop):
    /// returns those to end.
    private static func retire(_ entry: Entry, in s: inout State) -> [Entry] {
        s.retired.removeAll { $0.broadcast.trackCount == 0 }
        s.retired.append(entry)
        let excess = max(0, s.retired.count - maxRetired)
        let expired = Array(s.retired.prefix(excess))
        s.retired.removeFirst(excess)
        return expired
    }

    /// The peer behind `ingest` went away: its routes are withdrawn, and unannounced broadcasts it
    /// still fed end.
    func withdrawAll(from ingest: AnnounceIngest) -> Int {
        let id = ObjectIdentifier(ingest)
        let (paths, retired) = state.withLock { s -> ([String], [Entry]) in
            let paths = s.entries.values.filter { e in e.sources.contains { $0.ingest === ingest } }.map(\.path)
            let fed = s.retired.filter { e in e.feeds.values.contains { $0.ingest == id } }
            s.retired.removeAll { e in fed.contains { $0 === e } }
            return (paths, fed)
        }
        for path in paths { withdraw(path, from: ingest, sessionGone: true) }
        for entry in retired { end(entry) }
        return paths.count
    }

    /// Ends every broadcast (the relay stops).
    func close() {
        let all = state.withLock { s -> [Entry] in
            s.closed = true
            let all = Array(s.entries.values) + s.retired
            s.entries = [:]
            s.retired = []
            return all
        }
        for entry in all {
            origin.unpublish(entry.broadcast)
            end(entry)
        }
    }

    private func end(_ entry: Entry) {
        let feeds = state.withLock { _ in
            let feeds = Array(entry.feeds.values)
            entry.feeds = [:]
            return feeds
        }
        for feed in feeds { feed.upstream.cancel() }
        entry.broadcast.close(abort: .internal)
    }

    // MARK: Tracks

    /// Number of upstream subscriptions open.
    var upstreamCount: Int {
        state.withLock { s in (s.entries.values + s.retired).reduce(0) { $0 + $1.feeds.count } }
    }

    /// The latency budgets asked upstream, in ms (tests).
    var upstreamBudgetsMs: [UInt64] {
        state.withLock { s in (s.entries.values + s.retired).flatMap { $0.feeds.values.map(\.upstream.budgetMs) } }
    }

    /// Routes known to every broadcast offered.
    var routeCount: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.sources.count } } }

    /// The routes known to `path` (best first), for tests and `/metrics`.
    func routes(_ path: String) -> [AnnounceRoute] {
        state.withLock { s in
            guard let entry = s.entries[ByteKey(BroadcastPath.normalize(path))] else { return [] }
            let best = entry.bestSource.map { [$0] } ?? []
            return (best + entry.sources.filter { $0.serial != entry.best }).map(\.route)
        }
    }

    /// A track of `entry`'s broadcast, subscribed through its best route.
    private func makeTrack(_ name: String, entry: Entry) -> TrackProducer? {
        enum Made {
            case none
            case limited
            case made(TrackProducer, UpstreamDemand, String)
        }
        let made = state.withLock { s -> Made in
            guard !s.closed, s.entries[ByteKey(entry.path)] === entry, let source = entry.bestSource else {
                return .none
            }
            guard entry.broadcast.trackCount < Self.maxTracksPerBroadcast else {
                let now = ContinuousClock.now
                guard s.lastTrackLimitLog.map({ now - $0 >= .seconds(1) }) ?? true else { return .none }
                s.lastTrackLimitLog = now
                return .limited
            }
            let track = TrackProducer(name: name, info: nil, clock: SystemClock(), limits: cacheLimits)
            let upstream = upstream(for: track, of: entry, through: source)
            entry.feeds[ObjectIdentifier(track)] = Feed(track: track, upstream: upstream, source: source)
            return .made(track, upstream, source.ingest.label)
        }
        switch made {
        case .none:
            return nil
        case .limited:
            logger.warning(
                "\(entry.path) has \(Self.maxTracksPerBroadcast) tracks subscribed upstream: '\(name)' refused")
            return nil
        case .made(let track, let upstream, let label):
            let key = ObjectIdentifier(track)
            let box = WeakReference(self)
            let weakEntry = WeakReference(entry)
            // Subscribed at once with the default range (a TRACK request needs the upstream's info,
            // and a publisher keeps only so much: waiting for a subscriber's range lost moq-rs
            // publishers' first groups under load); the first subscriber's budget follows as
            // SUBSCRIBE_UPDATE (as moq-relay forwards its subscribers' preferences), later ones raise it.
            track.onDemand { range in
                guard let self = box.value, let entry = weakEntry.value else { return }
                self.state.withLock { _ in entry.feeds[key]?.upstream }?.demand(range)
            }
            upstream.demand(nil)
            logger.debug("\(label): subscribed upstream to \(entry.path)/\(name)")
            let weakTrack = WeakReference(track)
            track.onUnused {
                guard let self = box.value, let entry = weakEntry.value,
                    let loop = self.state.withLock({ _ in entry.feeds[key]?.upstream.session.loop })
                else { return }
                _ = loop.schedule(after: Self.linger) {
                    guard let self = box.value, let entry = weakEntry.value, let track = weakTrack.value,
                        track.observerCount == 0
                    else { return }
                    let feed = self.state.withLock { _ in entry.feeds.removeValue(forKey: key) }
                    feed?.upstream.cancel()
                    entry.broadcast.removeTrack(track)
                    self.logger.debug("last subscriber left \(entry.path)/\(track.name): upstream subscription closed")
                }
            }
            return track
        }
    }

    /// The subscription feeding `track` through `source`: when the peer resets it, the track moves
    /// to another route if there is one (``lost(_:of:through:)``). A publisher whose session is
    /// closing resets what it serves with SESSION_CLOSED on its way out; with no other route the
    /// track then ends with INTERNAL, as it does when the relay sees that session close first (and as
    /// moq-relay resets its subscribers when a publisher goes), whichever of the two arrives first.
    private func upstream(for track: TrackProducer, of entry: Entry, through source: Source) -> UpstreamDemand {
        let key = ObjectIdentifier(track)
        let serial = source.serial
        let box = WeakReference(self)
        let weakEntry = WeakReference(entry)
        let weakTrack = WeakReference(track)
        return UpstreamDemand(
            session: source.ingest.session, peerPath: source.peerPath, track: track, defaultRange: upstreamRange
        ) { code in
            guard let self = box.value, let entry = weakEntry.value else { return false }
            if self.lost(key, of: entry, through: serial) { return true }
            guard code == .sessionClosed, let track = weakTrack.value else { return false }
            track.abort(.internal)
            return true
        }
    }

    /// The upstream reset the subscription of a track pulled through route `serial` (it lost its
    /// own route, or a moment's loop between two relays refused it): true when the track moves to
    /// another route (the best of the others), false when it ends.
    private func lost(_ key: ObjectIdentifier, of entry: Entry, through serial: UInt64) -> Bool {
        let now = ContinuousClock.now
        let feed = state.withLock { s -> Feed? in
            guard !s.closed, let feed = entry.feeds[key], feed.source == serial,
                entry.sources.contains(where: { $0.serial != serial })
            else { return nil }
            feed.failovers.removeAll { now - $0 > Self.failoverWindow }
            guard feed.failovers.count < Self.maxFailovers else { return nil }
            feed.failovers.append(now)
            return feed
        }
        guard let feed else { return false }
        move([feed], of: entry, avoiding: serial)
        return true
    }

    /// Moves `feeds` onto the entry's best route (other than `avoiding`): a new subscription feeds
    /// the same track, the old one is ended without ending the track.
    private func move(_ feeds: [Feed], of entry: Entry, avoiding: UInt64? = nil) {
        for feed in feeds {
            let replaced = state.withLock { _ -> (old: UpstreamDemand, new: UpstreamDemand, label: String)? in
                let candidates = entry.sources.filter { $0.serial != avoiding }
                guard let best = RouteChoice.best(candidates.map(\.candidate), path: entry.path),
                    let track = feed.track.value, entry.feeds[ObjectIdentifier(track)] === feed
                else { return nil }
                let source = candidates[best]
                let old = feed.upstream
                feed.upstream = upstream(for: track, of: entry, through: source)
                feed.source = source.serial
                feed.ingest = ObjectIdentifier(source.ingest)
                return (old, feed.upstream, source.ingest.label)
            }
            guard let (old, new, label) = replaced else { continue }
            let wanted = old.demandedRange
            old.detach()
            new.demand(nil)
            if let wanted { new.demand(wanted) }
            logger.info("\(entry.path)/\(feed.track.value?.name ?? ""): moved to the route through \(label)")
        }
    }
}

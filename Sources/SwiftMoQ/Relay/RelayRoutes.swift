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
            let upstream = UpstreamDemand(
                session: source.ingest.session, peerPath: source.peerPath, track: track, defaultRange: upstreamRange)
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

    /// Moves `feeds` onto the entry's best route: a new subscription feeds the same track, the
    /// old one is ended without ending the track.
    private func move(_ feeds: [Feed], of entry: Entry) {
        for feed in feeds {
            let replaced = state.withLock { _ -> (old: UpstreamDemand, new: UpstreamDemand, label: String)? in
                guard let source = entry.bestSource, let track = feed.track.value,
                    entry.feeds[ObjectIdentifier(track)] === feed
                else { return nil }
                let old = feed.upstream
                feed.upstream = UpstreamDemand(
                    session: source.ingest.session, peerPath: source.peerPath, track: track,
                    defaultRange: upstreamRange)
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

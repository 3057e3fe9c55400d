// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqSync
import MoqTestKit
import Testing

@testable import SwiftMoQ

/// Swift relays linked as moq-relay's cluster peers: each routing rule, failover, and what a
/// publisher leaving does. The same with moq-dev's routing code in the middle is in
/// `ClusterInteropTests`.
@Suite("Relay cluster: peer links, route choice, failover", .serialized, .timeLimit(.minutes(3)))
struct ClusterRoutingTests {
    static func start(_ configure: (inout MoqRelay.Configuration) -> Void = { _ in }) throws -> MoqRelay {
        let verbose = ProcessInfo.processInfo.environment["SWIFTMOQ_RELAY_LOG"] == "1"
        var config = MoqRelay.Configuration(
            host: "127.0.0.1", port: 0, logger: verbose ? .standardError(level: .debug, label: "relay") : .silent)
        configure(&config)
        return try MoqRelay.start(config)
    }

    static func link(to relay: MoqRelay, cost: UInt64? = nil) -> PeerLink {
        PeerLink(
            url: try! MoqURL("moql://127.0.0.1:\(relay.port)/"), cost: cost,
            tls: TLSOptions(fingerprint: relay.fingerprint))
    }

    static func connect(
        _ relay: MoqRelay, _ path: String = "", configure: (inout ClientOptions) -> Void = { _ in }
    ) async throws -> MoqSession {
        try await relay.connectClient(path: path, configure: configure)
    }

    /// Relays A, B and C: B links to A; C links to A (cost 1) and to B (cost 5); a publisher on A
    /// writes `cam`/`video` (groups of 5 frames, 20 ms apart).
    struct Triangle {
        let a: MoqRelay
        let b: MoqRelay
        let c: MoqRelay
        let publisher: MoqSession
        let writing: GroupedPublisher

        static func start() async throws -> Triangle {
            let a = try ClusterRoutingTests.start { $0.clusterID = 1 }
            let b = try ClusterRoutingTests.start {
                $0.clusterID = 2
                $0.peers = [ClusterRoutingTests.link(to: a)]
            }
            let c = try ClusterRoutingTests.start {
                $0.clusterID = 3
                $0.peers = [ClusterRoutingTests.link(to: a), ClusterRoutingTests.link(to: b, cost: 5)]
            }
            let publisher = try await ClusterRoutingTests.connect(a)
            let broadcast = BroadcastProducer(path: "cam")
            let track = broadcast.createTrack("video")
            publisher.publish(broadcast)
            return Triangle(a: a, b: b, c: c, publisher: publisher, writing: GroupedPublisher(track))
        }

        func stop() async {
            writing.cancel()
            publisher.close()
            for relay in [c, b, a] { await relay.shutdown(grace: .milliseconds(100)) }
        }
    }

    // MARK: Route choice

    @Test(
        "route choice: the lowest cost, then the fewest hops, then moq-relay's FNV-1a of path and hops, then the newest"
    )
    func routeChoice() {
        typealias C = RouteChoice.Candidate
        let cheapLong = C(route: AnnounceRoute(hops: [1, 2, 3], costWarm: 2, costCold: 2), serial: 0)
        let dearShort = C(route: AnnounceRoute(hops: [4], costWarm: 3, costCold: 3), serial: 1)
        #expect(RouteChoice.best([dearShort, cheapLong], path: "demo") == 1)
        let short = C(route: AnnounceRoute(hops: [4, 5], costWarm: 2, costCold: 2), serial: 2)
        #expect(RouteChoice.best([cheapLong, short], path: "demo") == 1)
        // Equal cost and length: the hash decides, the same way whichever comes first.
        let x = C(route: AnnounceRoute(hops: [1, 2], costWarm: 2, costCold: 2), serial: 3)
        let y = C(route: AnnounceRoute(hops: [3, 4], costWarm: 2, costCold: 2), serial: 4)
        let first = RouteChoice.best([x, y], path: "demo")
        let second = RouteChoice.best([y, x], path: "demo")
        #expect(first.map { [x, y][$0] } == second.map { [y, x][$0] })
        // moq-relay's hash: seed 0x420C0DECB00B, prime 0x100000001b3, path bytes then hops as 8 bytes LE.
        #expect(RouteChoice.hash(path: "demo", hops: []) == 0xb016_97cd_42f5_6430)
        #expect(RouteChoice.hash(path: "demo", hops: [1, 2]) == 0x8948_574f_f296_9cb3)
        // The same route learnt twice: the newer.
        let old = C(route: x.route, serial: 5)
        let new = C(route: x.route, serial: 6)
        #expect(RouteChoice.best([old, new], path: "demo") == 1)
        #expect(RouteChoice.best([], path: "demo") == nil)
    }

    @Test("PeerLink parses moq-relay's spelling: ?cost= prices the link and is not sent, ?jwt= stays")
    func peerLinkParsing() throws {
        let link = try PeerLink(parsing: "moql://a.example:4443/?cost=7&jwt=T")
        #expect(link.cost == 7)
        #expect(link.url.query == "jwt=T")
        let bare = try PeerLink(parsing: "b.example")
        #expect(bare.url.scheme == "https" && bare.url.host == "b.example" && bare.cost == nil)
        #expect(throws: MoqError.self) { try PeerLink(parsing: "moql://a.example:4443/?cost=-1") }
        #expect(throws: MoqError.self) { try PeerLink(parsing: "moql://a.example:4443/?cost=4611686018427387904") }
    }

    // MARK: Each rule, through sessions

    @Test("a link's cost goes in SETUP: both ends add it to the routes they learn over the link")
    func linkCost() async throws {
        let a = try Self.start()
        let b = try Self.start { $0.peers = [Self.link(to: a, cost: 5)] }
        let atA = try await Self.connect(a)
        let atB = try await Self.connect(b)
        atA.publish(BroadcastProducer(path: "cam"))
        atB.publish(BroadcastProducer(path: "mic"))
        // A publisher's route costs 1 (its session's link); over the link, 5 more on either side.
        try await eventually("B to learn cam over the link") { b.routes(to: "cam").first?.costWarm == 6 }
        try await eventually("A to learn mic over the link") { a.routes(to: "mic").first?.costWarm == 6 }
        #expect(b.routes(to: "cam").first?.hops.count == 2)
        #expect(a.routes(to: "mic").first?.hops.count == 2)
        for s in [atA, atB] { s.close() }
        await b.shutdown(grace: .milliseconds(100))
        await a.shutdown(grace: .milliseconds(100))
    }

    @Test("a route that already passes through this relay is dropped")
    func ownHopDropped() async throws {
        let relay = try Self.start()
        let publisher = try await Self.connect(relay)
        publisher.publish(BroadcastProducer(path: "loop", route: AnnounceRoute(hops: [relay.hopID])))
        publisher.publish(BroadcastProducer(path: "fine", route: AnnounceRoute(hops: [relay.hopID &+ 1])))
        try await eventually("the route without this relay") { relay.origin.broadcast("fine") != nil }
        // Announcements on one stream are handled in order: "loop" came before "fine".
        #expect(relay.origin.broadcast("loop") == nil)
        #expect(relay.routes(to: "loop").isEmpty)
        publisher.close()
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("split horizon: a route through a peer is never offered to that peer")
    func splitHorizon() async throws {
        let relay = try Self.start()
        let publisher = try await Self.connect(relay)
        publisher.publish(BroadcastProducer(path: "through-777", route: AnnounceRoute(hops: [777])))
        publisher.publish(BroadcastProducer(path: "direct"))
        try await eventually("both broadcasts") { relay.origin.paths.count == 2 }
        let peer = try await Self.connect(relay) { $0.hopID = 777 }
        var seen: [String] = []
        for await event in peer.announced() {
            if case .active(let path, _) = event { seen.append(path) }
            if seen.contains("direct") { break }
        }
        // The whole first batch arrives together: "through-777" would have come with "direct". The
        // sleep is the thing under test (nothing more may arrive), not synchronisation.
        try await Task.sleep(for: .milliseconds(100))
        #expect(seen == ["direct"])
        let other = try await Self.connect(relay)
        try await other.waitForBroadcast("through-777")
        for s in [publisher, peer, other] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("a peer grant's announcements are routes: they do not own a path a publisher takes")
    func peerGrant() async throws {
        let key = Array("cluster-secret-0123456789abcdef!".utf8)
        let relay = try Self.start { $0.auth = RelayAuth(publicPrefixes: [], key: key) }
        let peerToken = JWT.signHS256(JWT.Claims(root: "", publish: [""], subscribe: [""], peer: true), key: key)
        let aliceToken = JWT.signHS256(JWT.Claims(root: "", publish: [""], subscribe: [""]), key: key)
        let carolToken = JWT.signHS256(JWT.Claims(root: "", publish: [""], subscribe: ["other"]), key: key)
        let peer = try await Self.connect(relay) { $0.authToken = peerToken }
        peer.publish(BroadcastProducer(path: "cam"))
        try await eventually("the peer's route") { relay.routes(to: "cam").count == 1 }
        // A publisher with its own grant is not refused: the peer's announcement is one more route.
        let alice = try await Self.connect(relay) { $0.authToken = aliceToken }
        alice.publish(BroadcastProducer(path: "cam"))
        try await eventually("two routes to cam") { relay.routes(to: "cam").count == 2 }
        #expect(alice.closeReason == nil)
        // Between two publishers' grants the path stays with the first, as before: the other is refused.
        let carol = try await Self.connect(relay) { $0.authToken = carolToken }
        carol.publish(BroadcastProducer(path: "cam"))
        try await eventually("carol to be refused") { carol.closeReason != nil }
        #expect(relay.routes(to: "cam").count == 2)
        for s in [peer, alice, carol] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("a peer that says GOAWAY: its tracks move to another route while its link still carries them, nothing ends")
    func peerGoaway() async throws {
        let t = try await Triangle.start()
        let (a, b, c) = (t.a, t.b, t.c)
        try await eventually("C to learn both routes") { c.routes(to: "cam").count == 2 }
        let (viewers, tallies) = try await watch("cam", track: "video", viewers: 1) { try await Self.connect(c) }
        let tally = tallies[0]
        defer { tally.cancel() }
        try await eventually("the first groups") { tally.groups.count >= 3 }
        #expect(b.upstreamSubscriptionCount == 0)
        // A tells C's link to go (A stays up, B's link stays): C re-prices A's routes and its track moves
        // through B while the link to A still carries it.
        let cLink = try #require(a.trackedSessions.first { $0.hop == 3 })
        cLink.session.goaway()
        try await eventually("the track to move through B") { b.upstreamSubscriptionCount == 1 }
        let last = tally.groups.last ?? 0
        try await eventually("5 more groups") { tally.groups.filter { $0 > last }.count >= 5 }
        #expect(tally.ended == nil)
        #expect(c.routes(to: "cam").first?.hops.last == 2, "C pulls through B: \(c.routes(to: "cam"))")
        #expect(c.openLinkCount == 2, "C keeps the link to A until A closes it")
        for s in viewers { s.close() }
        await t.stop()
    }

    @Test(
        "a publisher that comes back with the same grant gets a new broadcast: the old one's readers are not fed its groups"
    )
    func publisherReturns() async throws {
        let relay = try Self.start()
        let first = try await Self.connect(relay)
        let old = BroadcastProducer(path: "cam")
        let oldTrack = old.createTrack("video")
        first.publish(old)
        let viewer = try await Self.connect(relay)
        try await viewer.waitForBroadcast("cam")
        let before = viewer.subscribe(broadcast: "cam", track: "video", range: SubscriptionRange(maxLatencyMs: 5_000))
        for i in 0..<50 { oldTrack.writeSingleFrameGroup(Bytes(utf8: "old \(i)"), timestamp: UInt64(i)) }
        try await eventually("the old groups") { before.track.latestSequence == 49 }
        // The same publisher again (a restarted process: its groups start from 0).
        let offered = try #require(relay.origin.broadcast("cam"))
        let second = try await Self.connect(relay)
        let new = BroadcastProducer(path: "cam")
        let newTrack = new.createTrack("video")
        second.publish(new)
        try await eventually("a new broadcast offered") {
            relay.origin.broadcast("cam").map { $0 !== offered } ?? false
        }
        let after = viewer.subscribe(broadcast: "cam", track: "video", range: SubscriptionRange(maxLatencyMs: 5_000))
        newTrack.writeSingleFrameGroup(Bytes(utf8: "new 0"), timestamp: 0)
        try await eventually("the new publisher's group") { after.track.latestSequence == 0 }
        #expect(before.track.latestSequence == 49, "the old track was fed the new session's groups")
        // The old session leaves: the old track ends as a publisher's going ends it.
        first.close()
        try await eventually("the old track to end") { before.track.end != nil }
        #expect(before.track.end == .aborted(.internal))
        #expect(after.track.end == nil)
        for s in [second, viewer] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    // MARK: Three relays

    @Test(
        "three Swift relays: viewers on C pull once through the cheaper route, move to the other when that link dies, and the announcement ends everywhere when the publisher leaves"
    )
    func threeRelays() async throws {
        let t = try await Triangle.start()
        let (a, b, c) = (t.a, t.b, t.c)

        // C knows both: through A (1 + 1) before through B (1 + 1 + 5).
        try await eventually("C to learn both routes") { c.routes(to: "cam").count == 2 }
        let routes = c.routes(to: "cam")
        #expect(routes.map(\.costWarm) == [2, 7])
        #expect(routes.first?.hops.last == 1)

        let (viewers, readers) = try await watch("cam", track: "video", viewers: 5) { try await Self.connect(c) }
        try await eventually("every viewer to get 5 groups") { readers.allSatisfy { $0.groups.count >= 5 } }
        // One upstream subscription on C whatever the number of viewers; none through B.
        #expect(c.upstreamSubscriptionCount == 1)
        #expect(b.upstreamSubscriptionCount == 0)

        // The link to A dies: the track moves to the route through B, and no viewer sees an end.
        let before = readers.map { $0.groups.last ?? 0 }
        c.dropLink(0)
        try await eventually("the route through B to carry the track") { b.upstreamSubscriptionCount == 1 }
        try await eventually("every viewer to get 5 more groups") {
            zip(readers, before).allSatisfy { reader, last in reader.groups.filter { $0 > last }.count >= 5 }
        }
        for (reader, last) in zip(readers, before) {
            #expect(reader.ended == nil)
            let after = reader.groups.filter { $0 > last }
            // At most the group in flight when the link died is lost.
            #expect((after.first ?? .max) <= last + 2, "groups after the cut: \(after)")
            #expect(after == after.sorted(), "out of order: \(after)")
        }

        // The publisher leaves: gone from every relay.
        t.writing.cancel()
        t.publisher.close()
        try await eventually("the announcement to end everywhere", timeout: .seconds(5)) {
            a.origin.broadcast("cam") == nil && b.origin.broadcast("cam") == nil && c.origin.broadcast("cam") == nil
        }
        for s in viewers { s.close() }
        for r in readers { r.cancel() }
        await t.stop()
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

@Suite struct AnnounceTests {
    @Test func initialSetThenLiveStartsAndEnds() {
        let pair = SessionPair(serverConfig: SessionConfig(hopID: 42))
        let alice = pair.serverBroadcast("room/alice")
        var events: [AnnounceEvent] = []
        pair.client.requestAnnounces(prefix: "room") { events.append($0) }
        pair.run()
        #expect(events == [.active(path: "room/alice", route: AnnounceRoute(hops: [42], costWarm: 1, costCold: 1))])
        let bob = pair.serverBroadcast("/room//bob/")
        pair.run()
        #expect(events.last == .active(path: "room/bob", route: AnnounceRoute(hops: [42], costWarm: 1, costCold: 1)))
        alice.close()
        pair.run()
        #expect(events.last == .ended(path: "room/alice"))
        bob.close()
        pair.run()
        #expect(events.last == .ended(path: "room/bob"))
    }

    @Test func prefixesMatchWholeSegmentsOnly() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("room/alice")
        _ = pair.serverBroadcast("roomy/bob")
        var paths: [String] = []
        pair.client.requestAnnounces(prefix: "/room/") {
            if case .active(let p, _) = $0 { paths.append(p) }
        }
        pair.run()
        #expect(paths == ["room/alice"])
    }

    @Test func theSuffixOnTheWireIsRelativeToThePrefix() throws {
        let pair = SessionPair()
        _ = pair.serverBroadcast("room/alice")
        pair.client.requestAnnounces(prefix: "room") { _ in }
        pair.run()
        let announceStream = pair.link.client.log.compactMap { e -> Int64? in
            if case .data(let s, _, _) = e, !StreamID.isUnidirectional(s) { return s }
            return nil
        }.first!
        var r = WireReader(Bytes(pair.link.client.bytes(on: announceStream)))
        _ = try? AnnounceOk.decodeFramed(from: &r)
        #expect(try Announcement.decode(from: &r) == .start(suffix: "alice", route: AnnounceRoute()))
    }

    @Test func dotSegmentsBelowThePrefixAreHidden() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("room/.hidden")
        _ = pair.serverBroadcast(".secret/bob")
        _ = pair.serverBroadcast("room/visible")
        var all: [String] = []
        var secret: [String] = []
        pair.client.requestAnnounces(prefix: "") { if case .active(let p, _) = $0 { all.append(p) } }
        pair.client.requestAnnounces(prefix: ".secret") { if case .active(let p, _) = $0 { secret.append(p) } }
        pair.run()
        #expect(all == ["room/visible"])
        #expect(secret == [".secret/bob"])
    }

    @Test func routesThroughThePeerAreNotAnnouncedBackToIt() {
        let pair = SessionPair(clientConfig: SessionConfig(hopID: 99))
        let looped = BroadcastProducer(path: "loop", route: AnnounceRoute(hops: [5, 99], costWarm: 2, costCold: 2))
        pair.serverOrigin.publish(looped)
        _ = pair.serverBroadcast("fine")
        var paths: [String] = []
        pair.client.requestAnnounces(prefix: "") { if case .active(let p, _) = $0 { paths.append(p) } }
        pair.run()
        #expect(paths == ["fine"])
    }

    @Test func republishingSendsAnUpdateNotASecondStart() {
        let pair = SessionPair(serverConfig: SessionConfig(hopID: 1))
        _ = pair.serverBroadcast("cam")
        var events: [AnnounceEvent] = []
        pair.client.requestAnnounces(prefix: "") { events.append($0) }
        pair.run()
        pair.serverOrigin.publish(
            BroadcastProducer(path: "cam", route: AnnounceRoute(hops: [7], costWarm: 3, costCold: 4)))
        pair.run()
        #expect(events.count == 2)
        #expect(events.last == .active(path: "cam", route: AnnounceRoute(hops: [7, 1], costWarm: 4, costCold: 5)))
    }

    @Test func cancellingEndsEveryAnnouncedBroadcast() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("a")
        _ = pair.serverBroadcast("b")
        var events: [AnnounceEvent] = []
        let handle = pair.client.requestAnnounces(prefix: "") { events.append($0) }
        pair.run()
        handle.cancel()
        pair.run()
        #expect(events.suffix(3) == [.ended(path: "a"), .ended(path: "b"), .closed(.cancel)])
    }

    @Test func theServedAnnounceLimitRefusesExtraStreams() {
        var config = SessionConfig()
        config.limits.maxServedAnnounces = 2
        let pair = SessionPair(serverConfig: config)
        var closed: [StreamErrorCode?] = []
        for _ in 0..<3 {
            pair.client.requestAnnounces(prefix: "") { if case .closed(let c) = $0 { closed.append(c) } }
        }
        pair.run()
        #expect(closed == [.internal])
        #expect(pair.server.counters.refusedRequests == 1)
    }

    @Test func garbageOnAnAnnounceStreamResetsOnlyThatStream() {
        let pair = SessionPair()
        pair.link.client.writeRaw(400, [0x01, 0x03, 0x02, 0xff, 0xfe])  // a prefix that is not UTF-8
        pair.run()
        #expect(pair.server.isReady)
        #expect(pair.link.client.log.contains(.reset(stream: 400, code: StreamErrorCode.malformedTrack.wireValue)))
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

/// Values at the varint ceiling (2^62 − 1) from a peer: nothing traps, sums saturate, and
/// what is re-encoded for another session is valid on the wire.
@Suite struct CeilingTests {
    @Test("a route cost at the ceiling plus the link cost saturates and re-encodes")
    func routeCostSaturates() throws {
        let (pair, raw) = SessionPair.withRawServer()
        var events: [AnnounceEvent] = []
        pair.client.requestAnnounces(prefix: "") { events.append($0) }
        pair.run()
        let route = AnnounceRoute(hops: [5], costWarm: VarInt.max, costCold: VarInt.max - 1)
        raw.writeRaw(
            0, AnnounceOk(hopID: 9, activeCount: 1).encoded() + Announcement.start(suffix: "b", route: route).encoded())
        pair.run()
        guard case .active(_, let seen)? = events.first else {
            Issue.record("no announcement: \(events)")
            return
        }
        #expect(seen.costWarm == VarInt.max)
        #expect(seen.costCold == VarInt.max)
        // What a relay would announce onwards decodes again.
        var r = WireReader(Bytes(Announcement.start(suffix: "b", route: seen).encoded()))
        #expect(try Announcement.decode(from: &r) == .start(suffix: "b", route: seen))
    }

    @Test("a route of 32 hops is not relayed with a 33rd: it is reported as ended")
    func longRoutesAreNotRelayed() {
        let (pair, raw) = SessionPair.withRawServer()
        var events: [AnnounceEvent] = []
        pair.client.requestAnnounces(prefix: "") { events.append($0) }
        pair.run()
        let full = AnnounceRoute(hops: Array(1...32))
        let short = AnnounceRoute(hops: [1])
        raw.writeRaw(
            0,
            AnnounceOk(hopID: 99, activeCount: 2).encoded() + Announcement.start(suffix: "far", route: full).encoded()
                + Announcement.start(suffix: "near", route: short).encoded())
        pair.run()
        #expect(events == [.active(path: "near", route: AnnounceRoute(hops: [1, 99], costWarm: 1, costCold: 1))])
        // A shorter route later makes it usable; a long one again ends it.
        raw.writeRaw(0, Announcement.update(id: 0, route: short).encoded())
        raw.writeRaw(0, Announcement.update(id: 1, route: full).encoded())
        pair.run()
        #expect(
            events.suffix(2) == [
                .active(path: "far", route: AnnounceRoute(hops: [1, 99], costWarm: 1, costCold: 1)),
                .ended(path: "near"),
            ])
        // Never more than 32 hops on the wire, whatever a route holds.
        var w = WireWriter()
        w.writeBytes(Announcement.start(suffix: "x", route: AnnounceRoute(hops: Array(1...40))).encoded())
        var r = WireReader(w.view)
        if case .start(_, let route)? = try? Announcement.decode(from: &r) {
            #expect(route.hops == Array(9...40))
        } else {
            Issue.record("a 40-hop route did not encode to a decodable one")
        }
    }

    @Test("a group numbered 2^62 − 1 and a FIN without END: the end saturates and is sent as a valid END")
    func endAfterTheLastGroup() throws {
        let (pair, raw) = SessionPair.withRawServer()
        let upstream = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 1000))
        raw.writeRaw(0, TrackInfo().encoded(), fin: true)
        raw.writeRaw(4, SubscribeResponse.start(group: VarInt.max).encoded())
        raw.writeRaw(
            3 + 4, [0x00] + GroupHeader(subscribeID: 0, sequence: VarInt.max).encoded() + [0x00, 0x01, 0x41], fin: true)
        raw.writeRaw(4, SubscribeResponse.drop(start: 0, end: VarInt.max, code: VarInt.max).encoded(), fin: true)
        pair.run()
        #expect(upstream.end == .finished(end: VarInt.max))
        // Served on (as a relay does): START, then an END that is a valid varint.
        let (relay, downstream) = SessionPair.relaying(upstream, range: SubscriptionRange(maxLatencyMs: 1000))
        relay.run()
        #expect(downstream.end == .finished(end: VarInt.max))
    }

    @Test("DROP ranges spanning the whole varint space: counted without overflow, tracked in bounded memory")
    func dropFloods() {
        let (pair, raw) = SessionPair.withRawServer()
        let track = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 1000))
        raw.writeRaw(4, SubscribeResponse.start(group: 0).encoded())
        for _ in 0..<5 { raw.writeRaw(4, SubscribeResponse.drop(start: 0, end: VarInt.max, code: 5).encoded()) }
        // Thousands of disjoint single-group drops above a gap.
        for g in stride(from: UInt64(10), to: 40_000, by: 2) {
            raw.writeRaw(4, SubscribeResponse.drop(start: g, end: g, code: 5).encoded())
        }
        pair.run()
        #expect(track.groupsDropped == VarInt.max)
        #expect(pair.client.isReady)
    }

    @Test("a datagram at 2^61 µs cannot start a stream: that group is reset with TIMESTAMP_MISMATCH")
    func firstFrameDeltaOutOfRange() {
        // The subscriber has no datagram support, so the group must travel on a stream.
        let pair = SessionPair(datagrams: false)
        let track = pair.serverBroadcast("b").createTrack("t")
        track.writeDatagram(Bytes("late"), timestamp: 1 << 61)
        track.writeSingleFrameGroup(Bytes("ok"), timestamp: 5)
        let remote = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 10_000))
        #expect(pair.link.server.resetsSent.values.contains(StreamErrorCode.timestampMismatch.wireValue))
        #expect(pair.contents(remote).last?.1 == ["ok"])
        #expect(Frame(timestamp: (1 << 61) - 1, payload: Bytes()).encodedHeader(previous: 0) != nil)
        #expect(Frame(timestamp: 1 << 61, payload: Bytes()).encodedHeader(previous: 0) == nil)
    }

    @Test(
        "a relay serving a group that overtook the upstream's START starts its subscriber at the upstream's first group"
    )
    func relayWaitsForUpstreamStart() {
        let (pair, raw) = SessionPair.withRawServer()
        let upstream = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 10_000))
        // The relay's subscriber is there before anything arrives.
        let (relay, downstream) = SessionPair.relaying(upstream, range: SubscriptionRange(maxLatencyMs: 10_000))
        relay.run()
        // Group 1's stream overtakes the control stream's START and group 0.
        raw.writeRaw(7, [0x00] + GroupHeader(subscribeID: 0, sequence: 1).encoded() + [0x00, 0x01, 0x42], fin: true)
        pair.run()
        relay.run()
        raw.writeRaw(4, SubscribeResponse.start(group: 0).encoded())
        raw.writeRaw(11, [0x00] + GroupHeader(subscribeID: 0, sequence: 0).encoded() + [0x00, 0x01, 0x41], fin: true)
        pair.run()
        relay.run()
        #expect(relay.contents(downstream).map(\.0) == [0, 1])
    }

    @Test("a DROP code at the ceiling reaches the transport inside the WebTransport range")
    func peerCodesAreClamped() {
        let (pair, raw) = SessionPair.withRawServer()
        let track = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 1000))
        raw.writeRaw(4, SubscribeResponse.start(group: 0).encoded())
        raw.writeRaw(
            7, [0x00] + GroupHeader(subscribeID: 0, sequence: 3).encoded() + [0x00, 0x01, 0x41], fin: true)
        raw.writeRaw(4, SubscribeResponse.drop(start: 1, end: 1, code: VarInt.max).encoded())
        pair.run()
        // FETCH of the dropped group (as a relay's subscriber would) is refused with that code, clamped.
        let relay = SessionPair()
        let relayed = relay.serverBroadcast("b")
        relayed.onTrackRequest { $0 == track.name ? track : nil }
        _ = relayed.track(track.name)  // subscribed, as a relay's track is once someone asked for it
        var result: Result<[Frame], StreamErrorCode>?
        relay.client.fetch(Fetch(broadcast: "b", track: "t", group: 1)) { result = $0 }
        relay.run()
        let code = relay.link.server.resetsSent.values.first
        #expect(code == StreamErrorCode.webTransportLast)
        #expect(code.map { $0 <= VarInt.max } == true)
        #expect(result != nil)
    }
}

// SPDX-License-Identifier: MIT
import MoqWire
import Testing

/// Byte captures from moq-lite-06.md (observed on the wire with moq-ffi 0.4.18).
@Suite struct GoldenTests {
    @Test func rustServerSetup() throws {
        let bytes = hex("01 0e 02 01 01 01 05 08 c0 09 ee 12 31 85 a9 ac")
        var r = reader(bytes)
        #expect(try r.readVarInt() == UniStreamType.setup.rawValue)
        let setup = try Setup.decodeFramed(from: &r)
        #expect(r.isAtEnd)
        #expect(setup == Setup(probe: 1, origin: 0x0009_ee12_3185_a9ac))
        // Our encoder writes parameters in id order; the 8-byte origin stays 8 bytes.
        #expect([0x01] + setup.encoded() == bytes)
    }

    @Test func rustClientSetupWithPath() throws {
        let bytes = hex("01 22 03 02 12 \"/anon/room?jwt=abc\" 05 08 c00a5917b0c6be7d 01 01 01")
        var r = reader(bytes)
        _ = try r.readVarInt()
        let setup = try Setup.decodeFramed(from: &r)
        #expect(setup.path == "/anon/room?jwt=abc")
        #expect(setup.origin == 0x000a_5917_b0c6_be7d)
        #expect(setup.probe == 1)
        #expect(setup.role == nil)
    }

    @Test func minimalSetup() throws {
        #expect([0x01] + Setup().encoded() == hex("01 01 00"))
        var r = reader(hex("01 00"))
        #expect(try Setup.decodeFramed(from: &r) == Setup())
    }

    @Test func setupRoleAndUnknownParameters() throws {
        let setup = Setup(path: "/a", role: .subscriber, cost: 3, origin: 7)
        var r = reader(setup.encoded())
        #expect(try Setup.decodeFramed(from: &r) == setup)
        // Unknown id 0x21 is ignored.
        var unknown = reader(hex("05 01 21 02 aa bb"))
        #expect(try Setup.decodeFramed(from: &unknown) == Setup())
    }

    @Test func setupRejectsDuplicatesAndBadRole() {
        var dup = reader(hex("07 02 01 01 01 01 01 02"))
        #expect(throws: DecodeError.duplicate(1)) { try Setup.decodeFramed(from: &dup) }
        var role = reader(hex("04 01 03 01 07"))
        #expect(throws: DecodeError.invalidValue("role 7")) { try Setup.decodeFramed(from: &role) }
    }

    @Test func announceOkAndStarts() throws {
        var r = reader(hex("09 c009ee123185a9ac 01  00 08 04 \"demo\" 00 00 00"))
        let ok = try AnnounceOk.decodeFramed(from: &r)
        #expect(ok == AnnounceOk(hopID: 0x0009_ee12_3185_a9ac, activeCount: 1))
        let start = try Announcement.decode(from: &r)
        #expect(start == .start(suffix: "demo", route: AnnounceRoute()))
        #expect(start.encoded() == hex("00 08 04 \"demo\" 00 00 00"))
        #expect(r.isAtEnd)
    }

    @Test func announceStartWithHopsAndCost() throws {
        let bytes = hex("00 0b 05 \"demo2\" 02 0b 16 03 07")
        var r = reader(bytes)
        let start = try Announcement.decode(from: &r)
        #expect(start == .start(suffix: "demo2", route: AnnounceRoute(hops: [11, 22], costWarm: 3, costCold: 7)))
        #expect(start.encoded() == bytes)
    }

    @Test func announceThroughRelay() throws {
        let bytes = hex("00 0b 05 \"alice\" 01 4309 01 01")
        var r = reader(bytes)
        #expect(
            try Announcement.decode(from: &r)
                == .start(suffix: "alice", route: AnnounceRoute(hops: [777], costWarm: 1, costCold: 1)))
    }

    @Test func announceUpdateAndEnd() throws {
        let update = hex("02 04 00 00 05 05")
        var r = reader(update)
        #expect(try Announcement.decode(from: &r) == .update(id: 0, route: AnnounceRoute(costWarm: 5, costCold: 5)))
        #expect(Announcement.update(id: 0, route: AnnounceRoute(costWarm: 5, costCold: 5)).encoded() == update)
        var e = reader(hex("01 01 00"))
        #expect(try Announcement.decode(from: &e) == .end(id: 0))
        #expect(Announcement.end(id: 0).encoded() == hex("01 01 00"))
    }

    @Test func unknownAnnouncementIsSkippedBySize() throws {
        var r = reader(hex("09 02 aa bb  01 01 03"))
        #expect(try Announcement.decode(from: &r) == .unknown(type: 9))
        #expect(try Announcement.decode(from: &r) == .end(id: 3))
    }

    @Test func announceRequest() throws {
        let request = AnnounceRequest(prefix: "room")
        #expect([0x01] + request.encoded() == hex("01 05 04 \"room\""))
    }

    @Test func trackInfoDefaults() throws {
        let bytes = hex("07 7f 53 88 80 0f 42 40")
        var r = reader(bytes)
        let info = try TrackInfo.decodeFramed(from: &r)
        #expect(info == TrackInfo(priority: 127, maxAgeMs: 5000, timescale: 1_000_000))
        #expect(TrackInfo().encoded() == bytes)
    }

    @Test func trackInfoRejectsZeroTimescale() {
        var r = reader(hex("03 7f 00 00"))
        #expect(throws: DecodeError.invalidValue("timescale 0")) { try TrackInfo.decodeFramed(from: &r) }
    }

    @Test func trackRequest() throws {
        let request = TrackRequest(broadcast: "alice", track: "video")
        let bytes = hex("06 0c 05 \"alice\" 05 \"video\"")
        #expect([0x06] + request.encoded() == bytes)
    }

    @Test func subscribeAsForwardedByTheRelay() throws {
        let body = hex("00 05 \"alice\" 05 \"video\" 80 41f4 00 00 00 00")
        var r = reader(body)
        let sub = try Subscribe.decode(body: &r)
        #expect(r.isAtEnd)
        #expect(
            sub
                == Subscribe(
                    id: 0, broadcast: "alice", track: "video",
                    range: SubscriptionRange(priority: 0x80, maxLatencyMs: 500)))
        #expect(sub.encoded() == [UInt8(body.count)] + body)
    }

    @Test func subscribeBoundsArePlusOneWhereTheReferenceSays() throws {
        let sub = Subscribe(
            id: 7, broadcast: "b", track: "t",
            range: SubscriptionRange(
                priority: 1, maxLatencyMs: 0, groupStart: 3, groupEnd: 5, frameStart: 0, frameEnd: 2))
        // group_start raw 3, group_end 5+1, frame_start raw 0, frame_end 2+1.
        #expect(sub.encoded() == hex("0b 07 01 \"b\" 01 \"t\" 01 00 03 06 00 03"))
    }

    @Test func subscribeResponses() throws {
        var r = reader(hex("00 01 0a  01 01 0d  02 03 04 06 34"))
        #expect(try SubscribeResponse.decode(from: &r) == .start(group: 10))
        #expect(try SubscribeResponse.decode(from: &r) == .end(group: 13))
        #expect(try SubscribeResponse.decode(from: &r) == .drop(start: 4, end: 6, code: 0x34))
        #expect(SubscribeResponse.start(group: 10).encoded() == hex("00 01 0a"))
        #expect(SubscribeResponse.end(group: 13).encoded() == hex("01 01 0d"))
    }

    @Test func subscribeUpdate() throws {
        let update = SubscribeUpdate(range: SubscriptionRange(priority: 10, maxLatencyMs: 500))
        #expect(update.encoded() == hex("07 0a 41 f4 00 00 00 00"))
    }

    @Test func groupStreamsFromThePublisherCapture() throws {
        let stream = hex(
            "03 01 00 00  00 09 \"frame-0-0\"  80 01 04 6a 09 \"frame-0-1\"  80 01 04 6a 09 \"frame-0-2\"")
        var decoder = FrameDecoder(expectHeader: true)
        let events = try stream.withUnsafeBytes { try decoder.feed($0, fin: true) }
        #expect(decoder.isFinished)
        #expect(
            events == [
                .header(GroupHeader(subscribeID: 1, sequence: 0, frameStart: 0)),
                .frame(Frame(timestamp: 0, payload: Bytes(utf8: "frame-0-0"))),
                .frame(Frame(timestamp: 33333, payload: Bytes(utf8: "frame-0-1"))),
                .frame(Frame(timestamp: 66666, payload: Bytes(utf8: "frame-0-2"))),
            ])
        // Encoding the same frames reproduces the capture.
        var encoded = GroupHeader(subscribeID: 1, sequence: 0).encoded()
        var previous: UInt64 = 0
        for (i, ts) in [UInt64(0), 33333, 66666].enumerated() {
            let frame = Frame(timestamp: ts, payload: Bytes(utf8: "frame-0-\(i)"))
            encoded += frame.encodedHeader(previous: previous)! + frame.payload.array
            previous = ts
        }
        #expect(encoded == stream)
    }

    @Test func firstDeltaIsAbsolute() throws {
        let stream = hex("03 01 01 00  80 03 0d 3e 09 \"frame-1-0\"")
        var decoder = FrameDecoder(expectHeader: true)
        let events = try stream.withUnsafeBytes { try decoder.feed($0, fin: true) }
        #expect(events.last == .frame(Frame(timestamp: 99999, payload: Bytes(utf8: "frame-1-0"))))
    }

    @Test func fetchRequestAndReply() throws {
        let fetch = Fetch(broadcast: "b", track: "t", priority: 0, group: 1, frameStart: 1, frameEnd: 2)
        #expect(fetch.encoded() == hex("08 01 \"b\" 01 \"t\" 00 01 01 03"))
        var r = reader(fetch.encoded())
        #expect(try Fetch.decodeFramed(from: &r) == fetch)
        let reply = hex("80 04 11 a8 09 \"frame-1-1\"")
        var decoder = FrameDecoder(expectHeader: false)
        let events = try reply.withUnsafeBytes { try decoder.feed($0, fin: true) }
        #expect(events == [.frame(Frame(timestamp: 133_332, payload: Bytes(utf8: "frame-1-1")))])
    }

    @Test func datagram() throws {
        let bytes = hex("04 01 80051615 \"dg-10\"")
        let dg = try Datagram.decode(Bytes(bytes))
        #expect(dg == Datagram(subscribeID: 4, sequence: 1, timestamp: 333_333, payload: Bytes(utf8: "dg-10")))
        #expect(dg.encoded() == hex("04 01 80 05 16 15 \"dg-10\""))
    }

    @Test func probe() throws {
        var r = reader(hex("05 84c6a34d 01"))
        let p = try Probe.decodeFramed(from: &r)
        #expect(p == Probe(bitrate: 0x04c6_a34d, rttMs: 1))
    }

    @Test func goaway() throws {
        #expect([0x05] + Goaway().encoded() == hex("05 01 00"))
        let g = Goaway(uri: "moql://other:443/x")
        var r = reader(g.encoded())
        #expect(try Goaway.decodeFramed(from: &r) == g)
    }
}

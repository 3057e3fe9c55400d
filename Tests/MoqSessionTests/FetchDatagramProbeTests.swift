// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

@Suite struct FetchDatagramProbeTests {
    @Test func fetchServesACachedGroupAndAFrameRange() {
        let pair = SessionPair()
        let track = pair.serverBroadcast("b").createTrack("t", info: TrackInfo(maxAgeMs: 60_000))
        for g in 0..<3 {
            let group = track.appendGroup()
            for f in 0..<3 { group.write(Bytes("frame-\(g)-\(f)"), timestamp: UInt64((g * 3 + f) * 33_333)) }
            group.finish()
        }
        var whole: [Frame] = []
        var part: [Frame] = []
        pair.client.fetch(Fetch(broadcast: "b", track: "t", group: 1)) { whole = (try? $0.get()) ?? [] }
        pair.client.fetch(Fetch(broadcast: "b", track: "t", group: 1, frameStart: 1, frameEnd: 2)) {
            part = (try? $0.get()) ?? []
        }
        pair.run()
        #expect(
            whole.map { String(decoding: $0.payload.array, as: UTF8.self) } == ["frame-1-0", "frame-1-1", "frame-1-2"])
        #expect(part.map(\.timestamp) == [133_332, 166_665])
    }

    @Test func fetchOfAnUncachedGroupIsNotFound() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("b").createTrack("t")
        var result: Result<[Frame], StreamErrorCode>?
        pair.client.fetch(Fetch(broadcast: "b", track: "t", group: 9)) { result = $0 }
        pair.run()
        if case .failure(let code)? = result { #expect(code == .notFound) } else { Issue.record("expected failure") }
    }

    @Test func datagramGroupsTravelAsDatagramsWhenTheyFit() {
        let pair = SessionPair()
        let (track, remote) = pair.subscribedTrack("dg", range: SubscriptionRange(maxLatencyMs: 1000))
        pair.run()
        track.writeDatagram(Bytes("dg-0"), timestamp: 333_333)
        track.writeDatagram(Bytes(String(repeating: "z", count: 5000)), timestamp: 400_000)  // too large: stream
        pair.run()
        #expect(pair.server.counters.datagramsSent == 1)
        #expect(pair.client.counters.datagramsReceived == 1)
        #expect(pair.contents(remote).map(\.0) == [0, 1])
        #expect(remote.frames(of: remote.group(sequence: 0)!, from: 0).frames.first?.timestamp == 333_333)
    }

    @Test func withoutDatagramSupportDatagramGroupsUseStreams() {
        let pair = SessionPair(datagrams: false)
        let (track, remote) = pair.subscribedTrack("dg", range: SubscriptionRange(maxLatencyMs: 1000))
        pair.run()
        track.writeDatagram(Bytes("x"), timestamp: 1)
        pair.run()
        #expect(pair.server.counters.datagramsSent == 0)
        #expect(pair.contents(remote).map(\.1) == [["x"]])
    }

    @Test func datagramsForUnknownSubscriptionsAreDroppedSilently() {
        let pair = SessionPair()
        _ = pair.link.server.sendDatagram(
            Bytes(Datagram(subscribeID: 5, sequence: 1, timestamp: 1, payload: Bytes("x")).encoded()))
        _ = pair.link.server.sendDatagram(Bytes([0xc0]))  // truncated varint
        pair.run()
        #expect(pair.client.isReady)
        #expect(pair.client.counters.malformedDatagrams == 1)
    }

    @Test func probeReportsFollowTheTransportsEstimates() {
        let pair = SessionPair()
        var reports: [Probe] = []
        pair.client.requestProbe { reports.append($0) }
        pair.run()
        #expect(reports == [Probe(bitrate: 50_000_000, rttMs: 2)])
        pair.scheduler.advance(by: .seconds(1))
        #expect(reports.count == 1)  // unchanged values are not repeated within 10 s
        pair.link.server.transportEstimates = TransportEstimates(smoothedRTTMicros: 2000, sendRateBps: 80_000_000)
        pair.scheduler.advance(by: .milliseconds(200))
        #expect(reports.last == Probe(bitrate: 80_000_000, rttMs: 2))
        pair.scheduler.advance(by: .seconds(11))
        #expect(reports.count == 3)
    }

    @Test(
        "an idle connection's send rate (the reports and their ACKs, a few kbit/s either way) is not reported ten times a second"
    )
    func probeReportsIgnoreTheirOwnTraffic() {
        let pair = SessionPair()
        var reports: [Probe] = []
        pair.link.server.transportEstimates = TransportEstimates(smoothedRTTMicros: 100, sendRateBps: 400_000)
        pair.client.requestProbe { reports.append($0) }
        pair.run()
        #expect(reports == [Probe(bitrate: 400_000, rttMs: 0)])
        // The idle alternation: 3.7 kbit/s, then 7 kbit/s, every 100 ms; the RTT rounds 0 ↔ 1 ms.
        for step in 0..<30 {
            pair.link.server.transportEstimates = TransportEstimates(
                smoothedRTTMicros: step % 2 == 0 ? 400 : 600, sendRateBps: step % 2 == 0 ? 3_700 : 7_000)
            pair.scheduler.advance(by: .milliseconds(100))
        }
        #expect(reports.count == 2, "the drop to idle once, then nothing: \(reports)")
        #expect(reports.last?.bitrate == 3_700)
        // A real change is still reported at once.
        pair.link.server.transportEstimates = TransportEstimates(smoothedRTTMicros: 5_000, sendRateBps: 3_000_000)
        pair.scheduler.advance(by: .milliseconds(100))
        #expect(reports.last == Probe(bitrate: 3_000_000, rttMs: 5))
    }

    @Test func bytesWrittenByTheProbeOpenerAreMalformed() {
        let pair = SessionPair()
        pair.link.client.writeRaw(400, [0x04] + Probe(bitrate: 1, rttMs: 1).encoded())
        pair.run()
        #expect(pair.link.client.log.contains(.reset(stream: 400, code: StreamErrorCode.malformedTrack.wireValue)))
    }

    @Test func withoutProbeSupportProbeStreamsAreCancelled() {
        let pair = SessionPair(serverConfig: SessionConfig(serveProbe: false))
        pair.link.client.writeRaw(400, [0x04])
        pair.run()
        #expect(pair.link.client.log.contains(.reset(stream: 400, code: StreamErrorCode.cancel.wireValue)))
    }
}

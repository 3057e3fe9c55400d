// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

/// Frame bounds of SUBSCRIBE and FETCH, served as moq-dev serves them (checked on the wire with
/// moq-ffi 0.4.18, see `SubscriptionRangeInteropTests`): a frame start qualifies the start group
/// only, a frame end the end group only.
@Suite struct SubscriptionRangeTests {
    /// Five cached groups of four frames `g{g}f{f}`.
    static func cachedTrack(_ pair: SessionPair) -> TrackProducer {
        let track = pair.serverBroadcast("b").createTrack("t", info: TrackInfo(maxAgeMs: 60_000))
        for g in 0..<5 {
            let group = track.appendGroup()
            for f in 0..<4 { group.write(Bytes("g\(g)f\(f)"), timestamp: UInt64(g * 4 + f)) }
            group.finish()
        }
        return track
    }

    func served(_ range: SubscriptionRange) -> (contents: [[String]], end: TrackEnd?) {
        let pair = SessionPair()
        _ = Self.cachedTrack(pair)
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: remote, range: range)
        pair.run()
        return (pair.contents(remote).map(\.1), remote.end)
    }

    @Test func aFrameStartQualifiesOnlyTheStartGroup() {
        let got = served(SubscriptionRange(maxLatencyMs: 60_000, groupStart: 2, frameStart: 1))
        #expect(
            got.contents == [
                ["g2f1", "g2f2", "g2f3"], ["g3f0", "g3f1", "g3f2", "g3f3"], ["g4f0", "g4f1", "g4f2", "g4f3"],
            ])
    }

    @Test func aFrameEndQualifiesOnlyTheEndGroup() {
        let got = served(SubscriptionRange(maxLatencyMs: 60_000, groupStart: 1, groupEnd: 3, frameEnd: 1))
        #expect(
            got.contents == [["g1f0", "g1f1", "g1f2", "g1f3"], ["g2f0", "g2f1", "g2f2", "g2f3"], ["g3f0", "g3f1"]])
    }

    @Test func bothBoundsInOneGroup() {
        let got = served(
            SubscriptionRange(maxLatencyMs: 60_000, groupStart: 3, groupEnd: 3, frameStart: 1, frameEnd: 2))
        #expect(got.contents == [["g3f1", "g3f2"]])
    }

    @Test func aLaterResolvedStartBeginsAtFrameZero() {
        // Start group 0, frame 1, with a zero budget: the newest group (4) is served, whole.
        let got = served(SubscriptionRange(maxLatencyMs: 0, groupStart: 0, frameStart: 1))
        #expect(got.contents == [["g4f0", "g4f1", "g4f2", "g4f3"]])
    }

    @Test func aFrameEndWithoutAnEndGroupIsResetAsMalformed() {
        let got = served(SubscriptionRange(maxLatencyMs: 60_000, groupStart: 2, frameEnd: 1))
        #expect(got.contents.isEmpty)
        #expect(got.end == .aborted(.malformedTrack))
    }

    @Test func anUpdateWithAFrameEndButNoEndGroupIsResetAsMalformed() {
        let pair = SessionPair()
        _ = Self.cachedTrack(pair)
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 0))
        pair.run()
        #expect(pair.contents(remote).map(\.0) == [4])
        handle.update(SubscriptionRange(maxLatencyMs: 0, frameEnd: 3))
        pair.run()
        #expect(remote.end == .aborted(.malformedTrack))
        #expect(pair.client.isReady)
    }

    @Test func aFetchWhoseEndPrecedesItsStartIsResetAsMalformed() {
        let pair = SessionPair()
        _ = Self.cachedTrack(pair)
        var result: Result<[Frame], StreamErrorCode>?
        pair.client.fetch(Fetch(broadcast: "b", track: "t", group: 1, frameStart: 2, frameEnd: 1)) { result = $0 }
        pair.run()
        if case .failure(let code)? = result {
            #expect(code == .malformedTrack)
        } else {
            Issue.record("expected a reset, got \(String(describing: result))")
        }
    }

    @Test func aPartialGroupIsTakenOnlyWhereItWasAskedFor() {
        let (pair, raw) = SessionPair.withRawServer()
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(
            broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 60_000, groupStart: 5, frameStart: 2))
        pair.run()
        // Group 5 from frame 2 was asked for; group 6 from frame 2 was not (its keyframe would be missing).
        raw.writeRaw(
            7, [0x00] + GroupHeader(subscribeID: 0, sequence: 5, frameStart: 2).encoded() + [0x00, 0x01, 0x41],
            fin: true)
        raw.writeRaw(
            11, [0x00] + GroupHeader(subscribeID: 0, sequence: 6, frameStart: 2).encoded() + [0x00, 0x01, 0x42],
            fin: true)
        raw.writeRaw(
            15, [0x00] + GroupHeader(subscribeID: 0, sequence: 7, frameStart: 0).encoded() + [0x00, 0x01, 0x43],
            fin: true)
        pair.run()
        #expect(pair.contents(remote).map(\.0) == [5, 7])
        #expect(pair.link.client.stopsSent[11] == StreamErrorCode.cancel.wireValue)
        #expect(pair.client.counters.partialGroupsRefused == 1)
        #expect(pair.client.isReady)
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

/// Where a subscription to a relayed track starts (SUBSCRIBE_START): the relay's own upstream
/// subscription may start lower than this subscriber's budget reaches, and its backlog arrives
/// newest first.
@Suite("The start of a subscription to a relayed track")
struct RelayedStartTests {
    /// A track fed by an upstream subscription that started at `upstreamStart`.
    func relayedTrack(_ pair: SessionPair, upstreamStart: UInt64) -> TrackProducer {
        let track = pair.serverBroadcast("b").createTrack("t", info: TrackInfo(maxAgeMs: 60_000, timescale: 1_000_000))
        track.expectSubscriptionStart()
        track.setSubscriptionStart(upstreamStart)
        return track
    }

    /// Group `sequence` as received from upstream: one frame stamped `sequence` seconds.
    func arrive(_ track: TrackProducer, _ sequence: UInt64) {
        let group = track.createGroup(sequence: sequence)
        _ = group?.write(Bytes("\(sequence)"), timestamp: sequence * 1_000_000)
        group?.finish()
    }

    /// The client's subscription to the relayed track with `maxLatencyMs`, after a run.
    func subscribe(_ pair: SessionPair, maxLatencyMs: UInt64 = 60_000) -> TrackProducer {
        pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: maxLatencyMs))
    }

    @Test("cached groups older than the budget: START after them, not at the upstream's first group")
    func startAfterStaleGroups() {
        let pair = SessionPair()
        let track = relayedTrack(pair, upstreamStart: 0)
        for sequence in UInt64(0)..<10 { arrive(track, sequence) }
        // 3.5 s before the newest (9 s): groups 6…9. Groups 0…5 are here and too old.
        let remote = subscribe(pair, maxLatencyMs: 3_500)
        #expect(remote.subscriptionStart.sequence == 6)
        #expect(pair.contents(remote).map(\.0) == [6, 7, 8, 9])
    }

    @Test("a young upstream backlog arriving newest first is waited for, and the older groups are sent")
    func backlogArrivingNewestFirst() {
        let pair = SessionPair()
        let track = relayedTrack(pair, upstreamStart: 0)
        for sequence in (UInt64(5)..<10).reversed() { arrive(track, sequence) }
        let remote = subscribe(pair)
        #expect(remote.subscriptionStart.sequence == nil, "START waits for the backlog")
        pair.scheduler.advance(by: .milliseconds(50))
        for sequence in (UInt64(0)..<5).reversed() { arrive(track, sequence) }
        pair.run()
        #expect(remote.subscriptionStart.sequence == 0)
        #expect(pair.contents(remote).map(\.0) == Array(0..<10))
    }

    @Test("an upstream backlog arriving live edge first, then from the oldest up (as ours is sent): START at once")
    func backlogArrivingLiveEdgeFirstThenInOrder() {
        let pair = SessionPair()
        let track = relayedTrack(pair, upstreamStart: 0)
        arrive(track, 9)
        let remote = subscribe(pair)
        #expect(remote.subscriptionStart.sequence == nil, "START waits for the upstream's first group")
        // The second group to come is the upstream's first: no waiting for the rest.
        arrive(track, 0)
        pair.run()
        #expect(remote.subscriptionStart.sequence == 0)
        for sequence in UInt64(1)..<9 { arrive(track, sequence) }
        pair.run()
        #expect(pair.contents(remote).map(\.0) == Array(0..<10))
    }

    @Test("the backlog wait is bounded: groups that do not come are not waited for by the subscriber")
    func backlogThatNeverComes() {
        let pair = SessionPair()
        let track = relayedTrack(pair, upstreamStart: 0)
        for sequence in (UInt64(5)..<10).reversed() { arrive(track, sequence) }
        let remote = subscribe(pair)
        pair.scheduler.advance(by: .milliseconds(300))
        pair.run()
        #expect(remote.subscriptionStart.sequence == 5)
        #expect(pair.contents(remote).map(\.0) == [5, 6, 7, 8, 9])
    }

    @Test("a DROP holding the subscription's first group moves it past the run (before any group arrived)")
    func dropOfTheFirstGroups() {
        let track = TrackProducer(name: "t", info: nil)
        track.expectSubscriptionStart()
        track.setSubscriptionStart(50)
        track.markDropped(50...67, code: .old)
        #expect(track.subscriptionStart.sequence == 68)
        // A run elsewhere leaves it; one at the varint ceiling saturates.
        track.markDropped(80...90, code: .old)
        #expect(track.subscriptionStart.sequence == 68)
        track.markDropped(68...VarInt.max, code: .old)
        #expect(track.subscriptionStart.sequence == VarInt.max)
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

/// A subscriber slower than its publisher meets back-pressure: group streams open only
/// as the connection takes what is queued (the newest group first, then the rest from the
/// oldest up: `BacklogOrderTests`); what falls out of its budget
/// before its stream opens is dropped with SUBSCRIBE_DROP (never a reset it would see,
/// never the end of its session).
@Suite struct BackPressureTests {
    func groupStreams(_ pair: SessionPair) -> [Int64] {
        pair.link.server.sendOrders.keys.filter { StreamID.isUnidirectional($0) && $0 != 3 }.sorted()
    }

    @Test("a stalled link: at most a window of groups is queued; once it drains every group arrives, in order")
    func backlogDeliveredInOrder() {
        var limits = SessionLimits()
        limits.subscriptionSendWindow = 16 * 1024
        let pair = SessionPair(serverConfig: SessionConfig(limits: limits))
        let (track, remote) = pair.subscribedTrack("t", range: SubscriptionRange(maxLatencyMs: 10_000))
        pair.run()
        pair.link.server.stalled = true
        let payload = Bytes([UInt8](repeating: 7, count: 10_000))
        for i in 0..<20 {
            track.writeSingleFrameGroup(payload, timestamp: UInt64(i) * 10_000)
            pair.scheduler.advance(by: .milliseconds(10))
        }
        // Two groups fit the window before it is full; the others wait (no stream yet).
        #expect(groupStreams(pair).count <= 3)
        #expect(pair.link.server.totalUnsentBytes < 40_000)
        while pair.link.server.stalled || pair.link.server.totalUnsentBytes > 0 {
            pair.link.server.release()
            pair.scheduler.advance(by: .milliseconds(1))
            if pair.link.server.totalUnsentBytes > 0 { pair.link.server.stalled = true }
            if pair.contents(remote).count == 20 { break }
        }
        pair.scheduler.advance(by: .milliseconds(50))
        #expect(pair.contents(remote).map(\.0) == Array(0..<20))
        #expect(pair.link.server.resetsSent.isEmpty)
        #expect(pair.server.counters.groupsDroppedForBudget == 0)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("groups that wait longer than the budget are dropped, in runs, before any stream opens for them")
    func staleGroupsAreDroppedNotReset() throws {
        var limits = SessionLimits()
        limits.subscriptionSendWindow = 4 * 1024
        let pair = SessionPair(serverConfig: SessionConfig(limits: limits))
        let (track, remote) = pair.subscribedTrack("t", range: SubscriptionRange(maxLatencyMs: 200))
        pair.run()
        let payload = Bytes([UInt8](repeating: 1, count: 5000))
        track.writeSingleFrameGroup(payload, timestamp: 0)
        pair.run()
        pair.link.server.stalled = true
        // A burst: 29 more groups 50 ms apart by their timestamps, written at once (a publisher
        // catching up, or a relay receiving a backlog) while the link is stalled.
        for i in 1..<30 { track.writeSingleFrameGroup(payload, timestamp: UInt64(i) * 50_000) }
        pair.run()
        pair.scheduler.advance(by: .milliseconds(100))
        pair.link.server.release()
        pair.scheduler.advance(by: .milliseconds(500))
        // What arrived with frames (dropped groups are kept as empty placeholders).
        let got = pair.contents(remote).filter { !$0.1.isEmpty }.map(\.0)
        #expect(got.last == 29)
        #expect(got.count < 10)
        #expect(pair.contents(remote).count == 30)
        #expect(pair.server.counters.groupsDroppedForBudget > 15)
        // Dropped groups never had a stream: nothing the subscriber would see as an error.
        #expect(pair.link.server.resetsSent.isEmpty)
        // One DROP message per run of consecutive groups, not one per group.
        var drops: [(UInt64, UInt64)] = []
        for message in try #require(pair.subscribeResponses()) {
            if case .drop(let s, let e, let code) = message {
                drops.append((s, e))
                #expect(code == StreamErrorCode.old.rawValue)
            }
        }
        let dropped = drops.reduce(0) { $0 + Int($1.1 - $1.0 + 1) }
        #expect(UInt64(dropped) == pair.server.counters.groupsDroppedForBudget)
        #expect(drops.count < dropped / 4)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("the session's send bound holds across subscriptions; room goes to the higher priority first")
    func sessionBoundAndPriority() {
        var limits = SessionLimits()
        limits.subscriptionSendWindow = 64 * 1024
        limits.maxUnsentBytes = 30_000
        let pair = SessionPair(serverConfig: SessionConfig(limits: limits))
        let broadcast = pair.serverBroadcast("b")
        let low = broadcast.createTrack("low")
        let high = broadcast.createTrack("high")
        let lowRemote = pair.remoteTrack("low")
        let highRemote = pair.remoteTrack("high")
        pair.client.subscribe(
            broadcast: "b", track: lowRemote, range: SubscriptionRange(priority: 1, maxLatencyMs: 60_000))
        pair.client.subscribe(
            broadcast: "b", track: highRemote, range: SubscriptionRange(priority: 200, maxLatencyMs: 60_000))
        pair.run()
        pair.link.server.stalled = true
        let payload = Bytes([UInt8](repeating: 2, count: 10_000))
        for i in 0..<10 {
            low.writeSingleFrameGroup(payload, timestamp: UInt64(i))
            high.writeSingleFrameGroup(payload, timestamp: UInt64(i))
        }
        pair.run()
        #expect(pair.link.server.totalUnsentBytes < 30_000 + 20_000)
        // Drain a little at a time: the high-priority track finishes first.
        var highDoneFirst: Bool?
        for _ in 0..<200 where highDoneFirst == nil {
            pair.link.server.release()
            pair.run()
            pair.link.server.stalled = true
            if pair.contents(highRemote).count == 10 { highDoneFirst = pair.contents(lowRemote).count < 10 }
            if pair.contents(lowRemote).count == 10 { highDoneFirst = pair.contents(highRemote).count == 10 }
        }
        #expect(highDoneFirst == true)
    }

    @Test("a backlog of thousands of small groups starts in work linear in the groups, every group in order")
    func largeBacklogStartsLinearly() {
        var limits = SessionLimits()
        limits.subscriptionSendWindow = 16 << 20
        let groups = 3000
        let pair = SessionPair(serverConfig: SessionConfig(limits: limits), maxStreams: 2 * groups)
        let track = pair.serverBroadcast("b").createTrack("t")
        for i in 0..<groups { track.writeSingleFrameGroup(Bytes([UInt8(i & 0xff)]), timestamp: UInt64(i)) }
        let remote = pair.remoteTrack("t")
        pair.run()
        // Nothing the relay writes leaves yet (the connection's send buffer fills), so every group
        // started stays active with unsent bytes while the backlog is started in one go.
        pair.link.server.stalled = true
        let before = pair.link.server.unsentBytesQueries
        // A subscriber that asks for all of it (long-form's deep subscription, from the first group).
        pair.client.subscribe(
            broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 120_000, groupStart: 0))
        pair.run()
        #expect(groupStreams(pair).count == groups)
        // Each group's stream is asked about a few times, not once per group started after it
        // (3000 groups: ~9 million queries when the room was summed over every active group).
        let queries = pair.link.server.unsentBytesQueries - before
        #expect(queries < 10 * groups, "\(queries) queries for \(groups) groups")
        pair.link.server.stalled = false
        pair.link.server.release()
        pair.scheduler.advance(by: .milliseconds(50))
        #expect(pair.contents(remote).map(\.0) == Array(0..<UInt64(groups)))
        #expect(pair.link.server.resetsSent.isEmpty)
        #expect(pair.client.isReady && pair.server.isReady)
    }
}

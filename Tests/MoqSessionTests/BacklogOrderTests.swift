// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

/// A backlog goes out live edge first (moq-lite §5: within a subscription, the newest group
/// first), then from its oldest group up while it is within the subscriber's budget; what falls
/// out of the budget is dropped with SUBSCRIBE_DROP. The link drains a window at a time here, as
/// a congested path does.
@Suite("A backlog goes out newest group first")
struct BacklogOrderTests {
    static let payload = Bytes([UInt8](repeating: 3, count: 10_000))

    enum ReadError: Error { case nothing }

    /// A pair whose served subscriptions open a group stream only while less than 16 KB of theirs
    /// is unsent: with 10 kB groups, two at a time.
    func pair() -> SessionPair {
        var limits = SessionLimits()
        limits.subscriptionSendWindow = 16 * 1024
        return SessionPair(serverConfig: SessionConfig(limits: limits))
    }

    /// Group sequences in the order their streams reached the subscriber.
    func arrivals(_ pair: SessionPair) -> [UInt64] {
        var seen = Set<Int64>()
        var order: [UInt64] = []
        for case .data(let stream, let bytes, _) in pair.link.client.log
        where StreamID.isUnidirectional(stream) && StreamID.isServerInitiated(stream) {
            guard seen.insert(stream).inserted else { continue }
            var r = WireReader(Bytes(bytes))
            guard (try? r.readVarInt()) == UInt64(UniStreamType.group.rawValue),
                let header = try? GroupHeader.decodeFramed(from: &r)
            else { continue }
            order.append(header.sequence)
        }
        return order
    }

    /// The group sequence of each group stream the publisher opened, in the order it opened them
    /// (stream ids grow with each open; a group stream's send order ends in its sequence).
    func opened(_ pair: SessionPair) -> [UInt64] {
        pair.link.server.sendOrders.filter { StreamID.isUnidirectional($0.key) && $0.key != 3 }
            .sorted { $0.key < $1.key }.map { UInt64($0.value & 0xffff_ffff) }
    }

    /// What the subscribe stream answered: START, END, and the groups DROP covered.
    func responses(_ pair: SessionPair) throws -> (start: UInt64?, end: UInt64?, dropped: [UInt64]) {
        var result: (start: UInt64?, end: UInt64?, dropped: [UInt64]) = (nil, nil, [])
        for message in try #require(pair.subscribeResponses()) {
            switch message {
            case .start(let g): result.start = g
            case .end(let g): result.end = g
            case .drop(let s, let e, _): result.dropped += Array(s...e)
            case .unknown: continue
            }
        }
        return result
    }

    /// Lets the stalled link go one window at a time: what is queued is delivered, then the link
    /// stalls again before the publisher hears of the room (so what it opens next waits for the
    /// next step). A reader polls after every step; returns what it got, with the step it got it at.
    @discardableResult
    func drip(
        _ pair: SessionPair, reader: TrackConsumer? = nil, until done: () -> Bool
    ) -> [(group: UInt64, step: Int)] {
        var read: [(group: UInt64, step: Int)] = []
        for step in 0..<1000 {
            pair.link.server.release()
            pair.link.server.stalled = true
            pair.scheduler.advance(by: .milliseconds(1))
            while let reader, case .group(let g) = reader.poll() { read.append((g.sequence, step)) }
            if done() { break }
        }
        pair.link.server.release()
        pair.scheduler.advance(by: .milliseconds(1))
        while let reader, case .group(let g) = reader.poll() { read.append((g.sequence, 1000)) }
        return read
    }

    /// A subscription with a budget of `budgetMs` and a reader of what it receives; group 0 delivered.
    func subscribedWithGroupZero(budgetMs: UInt64) -> (SessionPair, TrackProducer, TrackProducer, TrackConsumer) {
        let pair = pair()
        let (track, remote) = pair.subscribedTrack("t", range: SubscriptionRange(maxLatencyMs: budgetMs))
        let reader = TrackConsumer(track: remote, maxLatencyMs: budgetMs)
        pair.run()
        track.writeSingleFrameGroup(Self.payload, timestamp: 0)
        pair.run()
        return (pair, track, remote, reader)
    }

    @Test("a stalled link's backlog within budget: the live edge opens first, then every older group in order")
    func stalledBacklogWithinBudget() throws {
        let (pair, track, remote, reader) = subscribedWithGroupZero(budgetMs: 10_000)
        pair.link.server.stalled = true
        for i in UInt64(1)...20 {
            track.writeSingleFrameGroup(Self.payload, timestamp: i * 10_000)
            pair.scheduler.advance(by: .milliseconds(10))
        }
        // Groups 1 and 2 filled the window before the link stalled for good; 3…20 wait.
        #expect(opened(pair) == [0, 1, 2])
        let read = drip(pair, reader: reader) { pair.contents(remote).count == 21 }
        // The newest group goes first; the rest from the oldest up.
        #expect(opened(pair) == [0, 1, 2, 20] + Array(3...19))
        #expect(arrivals(pair) == [0, 1, 2, 20] + Array(3...19))
        // Every group arrived and a reader in sequence order got every one, in order, by the
        // step the last of them arrived.
        #expect(pair.contents(remote).map(\.0) == Array(0...20))
        #expect(read.map(\.group) == Array(0...20))
        // Progressively, as the backlog arrives behind the live edge (newest to oldest would hold
        // every one of them until the oldest came last).
        #expect(read.first { $0.group == 3 }.map(\.step) == 1)
        #expect(pair.link.server.resetsSent.isEmpty)
        #expect(pair.server.counters.groupsDroppedForBudget == 0)
        // The transport ranks the live edge above the backlog it overtook.
        let orders = pair.link.server.sendOrders.filter { StreamID.isUnidirectional($0.key) && $0.key != 3 }
        let live = try #require(orders.first { $0.value & 0xffff_ffff == 20 }?.value)
        #expect(orders.values.allSatisfy { $0 <= live })
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("a burst beyond the budget: the live edge first, the rest within budget in order, the others dropped")
    func burstBeyondBudget() throws {
        let (pair, track, remote, reader) = subscribedWithGroupZero(budgetMs: 300)
        guard case .group(let first) = reader.poll() else { throw ReadError.nothing }
        #expect(first.sequence == 0)
        pair.link.server.stalled = true
        // 1 s of groups, 50 ms apart by their timestamps, written at once.
        for i in UInt64(1)...20 { track.writeSingleFrameGroup(Self.payload, timestamp: i * 50_000) }
        pair.run()
        // Within 300 ms of group 20: 14…19. The live edge's stream opens first.
        #expect(opened(pair) == [0, 20, 14])
        let read = drip(pair, reader: reader) { pair.contents(remote).count == 8 }
        #expect(opened(pair) == [0, 20] + Array(14...19))
        #expect(arrivals(pair) == [0, 20] + Array(14...19))
        // A reader in sequence order passes what was dropped at once (the DROP came before any
        // newer group) and reads the rest in order as it arrives, without waiting its budget.
        #expect(read.map(\.group) == Array(14...20))
        #expect(read.allSatisfy { $0.step < 10 })
        let answered = try responses(pair)
        #expect(answered.dropped == Array(1...13))
        #expect(pair.server.counters.groupsDroppedForBudget == 13)
        #expect(pair.link.server.resetsSent.isEmpty)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    /// 3 s cached on track "t": 29 finished groups 100 ms apart and the group being captured (29);
    /// then the link stalls.
    static func threeSecondsCached(_ pair: SessionPair) {
        let track = pair.serverBroadcast("b").createTrack("t", info: TrackInfo(maxAgeMs: 30_000, timescale: 1_000_000))
        for i in UInt64(0)..<29 {
            track.writeSingleFrameGroup(Self.payload, timestamp: i * 100_000)
            pair.scheduler.advance(by: .milliseconds(100))
        }
        _ = track.appendGroup().write(Self.payload, timestamp: 2_900_000)
        pair.run()
        pair.link.server.stalled = true
    }

    @Test("a new deep subscription (a relay's upstream after an outage): the newest group first, then START's")
    func subscriptionStartsAtTheLiveEdge() throws {
        let pair = pair()
        Self.threeSecondsCached(pair)
        let remote = pair.remoteTrack("t")
        let subscription = pair.client.subscribe(
            broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 30_000))
        pair.run()
        // A window's worth opened: the live edge, then the oldest group within the budget.
        #expect(opened(pair) == [29, 0])
        // The relay's subscriber asks for 300 ms (SUBSCRIBE_UPDATE): the rest of the backlog goes.
        subscription.update(SubscriptionRange(maxLatencyMs: 300))
        pair.run()
        drip(pair) { pair.contents(remote).count == 4 }
        #expect(arrivals(pair) == [29, 26, 27, 28])
        let answered = try responses(pair)
        #expect(answered.start == 0)
        #expect(Set(answered.dropped) == Set(0...25))
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("a subscription whose floor names a group: every group in sequence order, as moq-dev's publisher opens them")
    func aFloorOpensInSequenceOrder() throws {
        let pair = pair()
        Self.threeSecondsCached(pair)
        let remote = pair.remoteTrack("t")
        // A moq-ffi reader (`next_group`) skips a group that arrives after a newer one: live edge
        // first would lose it the floor group it asked for.
        pair.client.subscribe(
            broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 30_000, groupStart: 25))
        pair.run()
        #expect(opened(pair) == [25, 26])
        drip(pair) { pair.contents(remote).count == 5 }
        #expect(arrivals(pair) == Array(25...29))
        #expect(try responses(pair).start == 25)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    /// Where in the subscriber's arrivals END came, and where each group stream's first bytes came.
    func endAndGroupArrivals(_ pair: SessionPair) -> (end: Int?, groups: [Int]) {
        var subscribeBytes: [UInt8] = []
        var end: Int?
        var groups: [Int] = []
        var seen = Set<Int64>()
        for (index, event) in pair.link.client.log.enumerated() {
            guard case .data(let stream, let bytes, _) = event else { continue }
            if StreamID.isUnidirectional(stream) {
                guard StreamID.isServerInitiated(stream), stream != 3, seen.insert(stream).inserted else { continue }
                groups.append(index)
            } else if stream != 0, end == nil {
                subscribeBytes += bytes
                var r = WireReader(Bytes(subscribeBytes))
                while let message = try? SubscribeResponse.decode(from: &r) {
                    if case .end = message { end = index }
                }
            }
        }
        return (end, groups)
    }

    @Test("a track that ends under a newest-first backlog: END behind every group stream's bytes, then FIN")
    func endAfterTheBacklog() throws {
        let pair = pair()
        let (track, remote) = pair.subscribedTrack("t", range: SubscriptionRange(maxLatencyMs: 10_000))
        pair.run()
        pair.link.server.stalled = true
        for i in UInt64(0)...10 {
            track.writeSingleFrameGroup(Self.payload, timestamp: i * 10_000)
            pair.scheduler.advance(by: .milliseconds(10))
        }
        track.finish()
        pair.run()
        drip(pair) { remote.end != nil }
        #expect(arrivals(pair) == [0, 1, 10] + Array(2...9))
        #expect(remote.end == .finished(end: 11))
        #expect(pair.contents(remote).map(\.0) == Array(0...10))
        let answered = try responses(pair)
        #expect(answered.end == 11)
        #expect(answered.dropped.isEmpty)
        #expect(pair.server.counters.servedSubscriptionsCompleted == 1)
        // A moq-rs reader counts the track complete on END once it holds the newest group (which
        // went first) and then ends the subscription: every group must have reached it before.
        let (end, groups) = endAndGroupArrivals(pair)
        #expect(groups.count == 11)
        #expect(try #require(end) > groups.max() ?? .max)
    }

    @Test("a DROP ahead of the newest group: placeholders once a newer group arrives; a reader moves on at once")
    func dropAheadOfTheNewestGroup() throws {
        let clock = VirtualClock()
        let track = TrackProducer(name: "t", clock: clock)
        let reader = TrackConsumer(track: track, startAt: 0, maxLatencyMs: 300)
        track.createGroup(sequence: 0)?.finish()
        guard case .group(let first) = reader.poll() else { throw ReadError.nothing }
        #expect(first.sequence == 0)
        // The publisher serves its backlog newest first and says what it drops before the newer
        // groups arrive: nothing is cached above group 0 yet.
        track.markDropped(1...13, code: .old)
        #expect(track.groups(from: 1).isEmpty)
        track.createGroup(sequence: 20)?.finish()
        track.createGroup(sequence: 14)?.finish()
        // Without the placeholders the reader would wait its budget (300 ms) at group 1.
        guard case .group(let next) = reader.poll() else { throw ReadError.nothing }
        #expect(next.sequence == 14)
        #expect(track.groups(from: 1).prefix(13).map(\.sequence) == Array(1...13))
        #expect(track.groupsDropped == 13)

        // A group inside a remembered run splits it; the rest is placed when a newer group comes.
        track.markDropped(30...40, code: .old)
        track.createGroup(sequence: 35)?.finish()
        #expect(track.groups(from: 21).map(\.sequence) == Array(30...35))
        track.createGroup(sequence: 42)?.finish()
        #expect(track.groups(from: 21).map(\.sequence) == Array(30...40) + [42])
    }

    @Test("dropped runs ahead of the newest group are remembered up to a bound")
    func droppedRunsAheadAreBounded() {
        let track = TrackProducer(name: "t", clock: VirtualClock())
        track.createGroup(sequence: 0)?.finish()
        let runs = TrackProducer.maxDroppedAhead + 4
        for i in 0..<UInt64(runs) { track.markDropped((1 + 2 * i)...(1 + 2 * i), code: .old) }
        track.createGroup(sequence: UInt64(2 * runs + 1))?.finish()
        let placeholders = track.groups(from: 1).filter { $0.sequence < UInt64(2 * runs + 1) }
        #expect(placeholders.map(\.sequence) == (0..<UInt64(TrackProducer.maxDroppedAhead)).map { 1 + 2 * $0 })
    }
}

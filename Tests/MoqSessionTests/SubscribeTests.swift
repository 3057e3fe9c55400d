// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

@Suite struct SubscribeTests {
    @Test func framesArriveIntactAndInOrderAndTheEndPropagates() throws {
        let pair = SessionPair()
        let video = pair.serverBroadcast("room/cam").createTrack(
            "video", info: TrackInfo(priority: 60, maxAgeMs: 30_000, timescale: 1_000_000))
        let remote = pair.remoteTrack("video")
        pair.client.subscribe(broadcast: "room/cam", track: remote, range: SubscriptionRange(maxLatencyMs: 10_000))
        pair.run()
        for g in 0..<5 {
            let group = video.appendGroup()
            for f in 0..<3 {
                group.write(Bytes("g\(g)f\(f)"), timestamp: UInt64((g * 3 + f) * 33_333))
                pair.run()
            }
            group.finish()
        }
        video.finish()
        pair.run()
        #expect(remote.info == TrackInfo(priority: 60, maxAgeMs: 30_000, timescale: 1_000_000))
        #expect(pair.contents(remote).map(\.0) == [0, 1, 2, 3, 4])
        #expect(pair.contents(remote).map(\.1) == (0..<5).map { g in (0..<3).map { "g\(g)f\($0)" } })
        let timestamps = remote.groups(from: 0).flatMap { remote.frames(of: $0, from: 0).frames.map(\.timestamp) }
        #expect(timestamps == (0..<15).map { UInt64($0 * 33_333) })
        #expect(remote.end == .finished(end: 5))
    }

    @Test func aNewSubscriberGetsTheCachedGroupsThatFitItsBudget() {
        let pair = SessionPair()
        let track = pair.serverBroadcast("b").createTrack("t", info: TrackInfo(maxAgeMs: 10_000))
        for i in 0..<6 {
            track.writeSingleFrameGroup(Bytes("\(i)"), timestamp: UInt64(i))
            pair.scheduler.advance(by: .milliseconds(500))
        }
        // Groups are 500 ms apart: a 1200 ms budget reaches back to groups 3, 4, 5.
        let recent = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: recent, range: SubscriptionRange(maxLatencyMs: 1200))
        let newest = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: newest, range: SubscriptionRange(maxLatencyMs: 0))
        let all = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 60_000))
        #expect(pair.contents(recent).map(\.0) == [3, 4, 5])
        #expect(pair.contents(newest).map(\.0) == [5])
        #expect(pair.contents(all).map(\.0) == [0, 1, 2, 3, 4, 5])
    }

    @Test func theCacheKeepsGroupsForTheTracksMaxAgeAndAlwaysTheLatest() {
        let clock = VirtualClock()
        let track = TrackProducer(name: "t", info: TrackInfo(maxAgeMs: 1000), clock: clock)
        for i in 0..<5 {
            track.writeSingleFrameGroup(Bytes("\(i)"), timestamp: 0)
            clock.advance(by: 400_000_000)
        }
        #expect(track.groups(from: 0).map(\.sequence) == [2, 3, 4])
        // Each group costs its 5 payload bytes plus the per-frame overhead: two fit in 110 bytes.
        let bounded = TrackProducer(
            name: "b", info: TrackInfo(maxAgeMs: 60_000), clock: clock,
            limits: CacheLimits(maxBytes: 2 * (5 + TrackProducer.frameOverhead) + 4))
        for i in 0..<5 { bounded.writeSingleFrameGroup(Bytes("abcd\(i)"), timestamp: 0) }
        #expect(bounded.groups(from: 0).map(\.sequence) == [3, 4])
    }

    @Test func unknownBroadcastsAndTracksAreRefusedWithTheirCodes() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("known").createTrack("video")
        let noBroadcast = pair.remoteTrack("video")
        pair.client.subscribe(broadcast: "unknown", track: noBroadcast)
        let noTrack = pair.remoteTrack("audio")
        pair.client.subscribe(broadcast: "known", track: noTrack)
        pair.run()
        #expect(noBroadcast.end == .aborted(.unroutable))
        #expect(noTrack.end == .aborted(.notFound))
        #expect(pair.server.isReady)
    }

    @Test func trackInfoIsAnsweredOrRefused() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("b").createTrack(
            "t", info: TrackInfo(priority: 80, maxAgeMs: 30_000, timescale: 48_000))
        var results: [Result<TrackInfo, StreamErrorCode>] = []
        pair.client.trackInfo(broadcast: "b", track: "t") { results.append($0) }
        pair.client.trackInfo(broadcast: "b", track: "nope") { results.append($0) }
        pair.run()
        #expect(results.count == 2)
        #expect((try? results[0].get()) == TrackInfo(priority: 80, maxAgeMs: 30_000, timescale: 48_000))
        if case .failure(let code) = results[1] { #expect(code == .notFound) } else { Issue.record("expected failure") }
    }

    @Test func dynamicTracksWaitForTheirInfo() {
        let pair = SessionPair()
        let broadcast = pair.serverBroadcast("relayed")
        let pending = TrackProducer(name: "v", info: nil, clock: pair.scheduler.clock)
        broadcast.onTrackRequest { name in name == "v" ? pending : nil }
        var info: TrackInfo?
        pair.client.trackInfo(broadcast: "relayed", track: "v") { info = try? $0.get() }
        pair.run()
        #expect(info == nil)
        pending.setInfo(TrackInfo(priority: 1, maxAgeMs: 2, timescale: 3))
        pair.run()
        #expect(info == TrackInfo(priority: 1, maxAgeMs: 2, timescale: 3))
    }

    @Test func tenThousandGroupsOnOneSubscriptionWithAHundredStreamCredit() {
        let pair = SessionPair(maxStreams: 100)
        let track = pair.serverBroadcast("b").createTrack("audio")
        let remote = pair.remoteTrack("audio")
        let consumer = TrackConsumer(track: remote)
        pair.client.subscribe(broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 1_000_000))
        pair.run()
        var received = 0
        for i in 0..<10_000 {
            track.writeSingleFrameGroup(Bytes("\(i)"), timestamp: UInt64(i) * 20_000)
            if i % 250 == 0 { pair.run() }
            if i % 500 == 0 {
                while case .group(let g) = consumer.poll() {
                    while case .frame = g.poll() { received += 1 }
                }
            }
        }
        track.finish()
        pair.run()
        while case .group(let g) = consumer.poll() {
            while case .frame = g.poll() { received += 1 }
        }
        #expect(received == 10_000)
        #expect(remote.end == .finished(end: 10_000))
        #expect(pair.server.counters.groupsSent == 10_000)
        #expect(pair.server.counters.streamCreditWaits > 0)
    }

    @Test func aLateJoinerReadsCachedGroupsInOrderThoughTheyArriveNewestFirst() {
        let pair = SessionPair()
        let track = pair.serverBroadcast("b").createTrack("t", info: TrackInfo(maxAgeMs: 60_000))
        for i in 0..<5 { track.writeSingleFrameGroup(Bytes("\(i)"), timestamp: UInt64(i)) }
        pair.link.server.stalled = true
        let remote = pair.remoteTrack("t")
        let consumer = TrackConsumer(track: remote, maxLatencyMs: 10_000)
        pair.client.subscribe(broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 10_000))
        pair.run()
        pair.link.server.release(bySendOrder: true)
        // Read after every delivery, as a live reader would; time passes between arrivals,
        // so the older groups are created (received) after the newer ones.
        var order: [UInt64] = []
        repeat {
            while case .group(let g) = consumer.poll() { order.append(g.sequence) }
            pair.scheduler.virtualClock.advance(by: 1_000_000)
        } while pair.scheduler.step()
        #expect(order == [0, 1, 2, 3, 4])
        // They did arrive newest first.
        #expect(remote.groups(from: 0).map(\.sequence) == [0, 1, 2, 3, 4])
    }

    @Test func consumersWithAZeroBudgetSkipToTheNewestGroup() {
        let clock = VirtualClock()
        let track = TrackProducer(name: "t", clock: clock)
        let consumer = TrackConsumer(track: track, maxLatencyMs: 0)
        for i in 0..<3 {
            track.writeSingleFrameGroup(Bytes("\(i)"), timestamp: 0)
            clock.advance(by: 1_000_000)
        }
        guard case .group(let g) = consumer.poll() else { Issue.record("no group"); return }
        #expect(g.sequence == 2)
        let every = TrackConsumer(track: track, startAt: 0)
        var seqs: [UInt64] = []
        while case .group(let g) = every.poll() { seqs.append(g.sequence) }
        #expect(seqs == [0, 1, 2])
    }

    /// `ms` later, behind the stalled link, a group "fresh" starts (timestamp `ms`, in µs).
    func freshGroupBehindTheStall(_ pair: SessionPair, _ track: TrackProducer, afterMs ms: UInt64) -> GroupProducer {
        pair.scheduler.advance(by: .milliseconds(Int(ms)))
        let group = track.appendGroup()
        group.write(Bytes("fresh"), timestamp: ms * 1_000)
        pair.run()
        return group
    }

    /// The link drains and the newest group is finished.
    func releaseTheStall(_ pair: SessionPair, finishing group: GroupProducer) {
        pair.link.server.release()
        group.finish()
        pair.run()
    }

    @Test func staleGroupsBackedUpOnACongestedLinkAreResetAsOld() {
        let pair = SessionPair()
        let (track, remote) = pair.subscribedTrack("video", range: SubscriptionRange(maxLatencyMs: 100))
        pair.run()
        pair.link.server.stalled = true
        let first = track.appendGroup()
        first.write(Bytes(String(repeating: "x", count: 1000)), timestamp: 0)
        pair.run()
        let second = freshGroupBehindTheStall(pair, track, afterMs: 150)
        #expect(pair.server.counters.groupsResetAsOld == 1)
        releaseTheStall(pair, finishing: second)
        #expect(
            remote.group(sequence: 0) == nil
                || remote.frames(of: remote.group(sequence: 0)!, from: 0).status != .finished)
        #expect(pair.contents(remote).last?.1 == ["fresh"])
    }

    @Test func aBackedUpGroupLongerThanTheBudgetKeepsItsFreshTail() throws {
        // A 300 ms GOP under a 100 ms budget: the older group *started* 300 ms before the
        // newest, but its last frame is 20 ms older than the newest's first. Its tail is as
        // fresh as anything the subscriber has, so it is not reset (moq-dev's relay, which
        // ages a group by its first frame, resets it; on a lossy link that cut every GOP's
        // last frames).
        let pair = SessionPair()
        let (track, remote) = pair.subscribedTrack("video", range: SubscriptionRange(maxLatencyMs: 100))
        pair.run()
        pair.link.server.stalled = true
        let first = track.appendGroup()
        for t: UInt64 in [0, 100_000, 200_000, 280_000] {
            first.write(Bytes(String(repeating: "x", count: 500)), timestamp: t)
        }
        first.finish()
        pair.run()
        let second = freshGroupBehindTheStall(pair, track, afterMs: 300)
        #expect(pair.server.counters.groupsResetAsOld == 0)
        releaseTheStall(pair, finishing: second)
        let old = try #require(remote.group(sequence: 0))
        #expect(remote.frames(of: old, from: 0).status == .finished)
        #expect(remote.frames(of: old, from: 0).frames.count == 4)
    }

    @Test func uncongestedOldGroupsCompleteEvenWithAZeroBudget() {
        let pair = SessionPair()
        let (track, remote) = pair.subscribedTrack("video", range: SubscriptionRange(maxLatencyMs: 0))
        pair.run()
        let first = track.appendGroup()
        first.write(Bytes("a"), timestamp: 0)
        pair.run()
        pair.scheduler.advance(by: .milliseconds(50))
        let second = track.appendGroup()
        second.write(Bytes("b"), timestamp: 1)
        first.write(Bytes("a2"), timestamp: 2)
        first.finish()
        second.finish()
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["a", "a2"], ["b"]])
    }

    @Test func subscriberPriorityOrdersGroupStreams() {
        let pair = SessionPair()
        let b = pair.serverBroadcast("b")
        let low = b.createTrack("low")
        let high = b.createTrack("high")
        pair.client.subscribe(
            broadcast: "b", track: pair.remoteTrack("low"), range: SubscriptionRange(priority: 1, maxLatencyMs: 1000))
        pair.client.subscribe(
            broadcast: "b", track: pair.remoteTrack("high"), range: SubscriptionRange(priority: 200, maxLatencyMs: 1000)
        )
        pair.run()
        low.writeSingleFrameGroup(Bytes("l0"), timestamp: 0)
        low.writeSingleFrameGroup(Bytes("l1"), timestamp: 0)
        high.writeSingleFrameGroup(Bytes("h0"), timestamp: 0)
        pair.run()
        let orders = pair.link.server.sendOrders.filter { StreamID.isUnidirectional($0.key) && $0.key != 3 }
        let sorted = orders.sorted { $0.value > $1.value }.map(\.key)
        // high first, then within "low" the newest group first.
        let streams = pair.link.client.peerStreams.filter { StreamID.isUnidirectional($0) && $0 != 3 }
        #expect(sorted.count == 3)
        #expect(sorted.first == streams.last)  // h0 was opened last but ranks first
        #expect(orders.values.allSatisfy { $0 < Int64.max - 1 })
    }

    @Test func updatesChangePriority() {
        let pair = SessionPair()
        let track = pair.serverBroadcast("b").createTrack("t")
        let handle = pair.client.subscribe(
            broadcast: "b", track: pair.remoteTrack("t"), range: SubscriptionRange(priority: 1, maxLatencyMs: 1000))
        pair.run()
        let group = track.appendGroup()
        group.write(Bytes("x"), timestamp: 0)
        pair.run()
        let stream = pair.link.server.sendOrders.keys.filter { StreamID.isUnidirectional($0) && $0 != 3 }.first!
        let before = pair.link.server.sendOrders[stream]!
        handle.update(SubscriptionRange(priority: 250, maxLatencyMs: 1000))
        pair.run()
        #expect(pair.link.server.sendOrders[stream]! > before)
    }

    @Test func cancellingStopsDeliveryAndFreesTheServedSubscription() {
        let pair = SessionPair()
        let track = pair.serverBroadcast("b").createTrack("t")
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 1000))
        pair.run()
        track.writeSingleFrameGroup(Bytes("1"), timestamp: 0)
        pair.run()
        handle.cancel()
        pair.run()
        #expect(track.observerCount == 0)
        #expect(remote.end == .aborted(.cancel))
        track.writeSingleFrameGroup(Bytes("2"), timestamp: 0)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["1"]])
    }

    @Test func cancellingResetsGroupsStillQueuedAndStopsThoseArriving() {
        // A player moving to another rendition on a congested path: what the publisher has
        // queued for the old one (a finished group not yet sent, a group half sent) must not
        // take the path any more.
        let pair = SessionPair()
        let track = pair.serverBroadcast("b").createTrack("t")
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(
            broadcast: "b", track: remote, range: SubscriptionRange(maxLatencyMs: 10_000))
        pair.run()
        let arriving = track.appendGroup()
        arriving.write(Bytes("a"), timestamp: 0)
        pair.run()
        let arrivingStream = pair.link.client.peerStreams.filter { StreamID.isUnidirectional($0) && $0 != 3 }.last!
        pair.link.server.stalled = true
        arriving.write(Bytes(String(repeating: "x", count: 1000)), timestamp: 1)
        arriving.finish()
        let queued = track.appendGroup()
        queued.write(Bytes(String(repeating: "y", count: 1000)), timestamp: 2)
        queued.finish()
        pair.run()
        let serverStreams = pair.link.server.sendOrders.keys.filter { StreamID.isUnidirectional($0) && $0 != 3 }
        #expect(serverStreams.count == 2)
        handle.cancel()
        pair.run()
        #expect(pair.link.client.stopsSent[arrivingStream] == StreamErrorCode.cancel.wireValue, "stopped at once")
        for stream in serverStreams {
            #expect(pair.link.server.resetsSent[stream] == StreamErrorCode.cancel.wireValue, "stream \(stream) reset")
        }
    }

    @Test func thePublisherGoingAwayAbortsTheSubscribersTrack() {
        let pair = SessionPair()
        let b = pair.serverBroadcast("b")
        let track = b.createTrack("t")
        let remote = pair.subscribe("t", range: SubscriptionRange(maxLatencyMs: 1000))
        track.writeSingleFrameGroup(Bytes("1"), timestamp: 0)
        b.close(abort: .internal)
        pair.run()
        #expect(remote.end == .aborted(.internal))
    }

    @Test func sessionCloseAbortsOwnTracksWithSessionClosed() {
        let pair = SessionPair()
        _ = pair.serverBroadcast("b").createTrack("t")
        let remote = pair.subscribe("t")
        pair.server.close(.cancel)
        pair.run()
        #expect(remote.end == .aborted(.sessionClosed))
    }

    @Test func servedSubscriptionLimitRefusesExtras() {
        var config = SessionConfig()
        config.limits.maxServedSubscriptions = 2
        let pair = SessionPair(serverConfig: config)
        _ = pair.serverBroadcast("b").createTrack("t")
        let tracks = (0..<3).map { _ in pair.remoteTrack("t") }
        for t in tracks { pair.client.subscribe(broadcast: "b", track: t) }
        pair.run()
        #expect(tracks.filter { $0.end == .aborted(.internal) }.count == 1)
    }

    @Test func garbageOnASubscribeStreamResetsOnlyThatStream() {
        let pair = SessionPair()
        let (track, remote) = pair.subscribedTrack("t", range: SubscriptionRange(maxLatencyMs: 1000))
        pair.link.client.writeRaw(400, [0x02, 0x02, 0x00, 0x01])  // SUBSCRIBE whose body ends inside the path
        pair.run()
        track.writeSingleFrameGroup(Bytes("still fine"), timestamp: 0)
        pair.run()
        #expect(pair.link.client.log.contains(.reset(stream: 400, code: StreamErrorCode.malformedTrack.wireValue)))
        #expect(pair.contents(remote).map(\.1) == [["still fine"]])
        #expect(pair.server.isReady)
    }

    @Test func garbageOnAGroupStreamStopsOnlyThatGroup() {
        let (pair, raw) = SessionPair.withRawServer()
        let remote = pair.subscribe("t")
        // A good group 0, then group 1 claiming a 40 MB frame, then a good group 2.
        raw.writeRaw(
            7, [0x00] + GroupHeader(subscribeID: 0, sequence: 0).encoded() + [0x00, 0x02, 0x68, 0x69], fin: true)
        raw.writeRaw(
            11, [0x00] + GroupHeader(subscribeID: 0, sequence: 1).encoded() + [0x00, 0xc0, 0, 0, 0, 0x02, 0x80, 0, 0])
        raw.writeRaw(15, [0x00] + GroupHeader(subscribeID: 0, sequence: 2).encoded() + [0x00, 0x01, 0x21], fin: true)
        pair.run()
        #expect(pair.link.client.stopsSent[11] == StreamErrorCode.frameTooLarge.wireValue)
        #expect(pair.contents(remote).map(\.1) == [["hi"], ["!"]])
        #expect(pair.client.isReady)
    }

    @Test func groupsForUnknownSubscriptionsAreRefused() {
        let (pair, raw) = SessionPair.withRawServer()
        raw.writeRaw(7, [0x00] + GroupHeader(subscribeID: 77, sequence: 0).encoded() + [0x00, 0x01, 0x41], fin: true)
        pair.run()
        #expect(pair.link.client.stopsSent[7] == StreamErrorCode.cancel.wireValue)
        #expect(pair.client.isReady)
    }
}

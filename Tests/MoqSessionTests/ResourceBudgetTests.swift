// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

/// What a peer can make a session hold is bounded: every limit in ``SessionLimits`` is hit
/// here, and going over one resets the stream that did (or closes the session) with a
/// stated code, logs it, and leaves everything else working.
@Suite struct ResourceBudgetTests {
    /// A server core with `limits` and a raw client that has sent its SETUP.
    func rawClient(_ limits: SessionLimits = SessionLimits()) -> (SessionPair, MemoryTransport, LimitLog) {
        let log = LimitLog()
        let pair = SessionPair(serverConfig: SessionConfig(limits: limits), connect: false)
        pair.server.delegate = log
        pair.server.connected()
        pair.run()
        let raw = pair.link.client
        raw.writeRaw(2, [0x01] + Setup().encoded(), fin: true)
        pair.run()
        return (pair, raw, log)
    }

    @Test("credit for an incomplete control message is held until it completes, then returned")
    func creditFollowsConsumption() {
        let (pair, raw, _) = rawClient()
        let track = pair.serverBroadcast("b").createTrack("t")
        track.writeSingleFrameGroup(Bytes("x"), timestamp: 0)
        let request = [UInt8(0x06)] + TrackRequest(broadcast: "b", track: "t").encoded()
        raw.writeRaw(0, Array(request.prefix(4)))
        pair.run()
        // The stream type is parsed (its byte consumed); the rest of the message is held.
        #expect(pair.link.server.consumedBytes[0] == 1)
        #expect(pair.server.resourceUsage.incomingCreditHeldBytes == 3)
        raw.writeRaw(0, Array(request.dropFirst(4)))
        pair.run()
        #expect(pair.link.server.consumedBytes[0] == request.count)
        #expect(pair.server.resourceUsage.incomingCreditHeldBytes == 0)
    }

    @Test("incomplete control messages on many streams: the one over the session's budget is reset, the rest work")
    func incomingBudget() {
        var limits = SessionLimits()
        limits.maxIncomingBytes = 100_000
        let (pair, raw, log) = rawClient(limits)
        // 40 announce requests, each declaring a 4000-byte message and sending 3000 of it.
        var header = WireWriter()
        header.writeUInt8(0x01)
        header.writeVarInt(4000)
        let partial = header.bytes + [UInt8](repeating: 0x61, count: 3000)
        for i in 0..<40 { raw.writeRaw(Int64(4 * i), partial) }
        pair.run()
        #expect(pair.server.resourceUsage.incomingBufferedBytes <= limits.maxIncomingBytes)
        #expect(pair.link.server.resetsSent.count >= 6)
        #expect(log.events.contains(.incomingBytes(limits.maxIncomingBytes)))
        #expect(pair.server.isReady)
        // A complete request still gets its answer.
        _ = pair.serverBroadcast("b").createTrack("t")
        raw.writeRaw(400, [0x06] + TrackRequest(broadcast: "b", track: "t").encoded())
        pair.run()
        #expect(!raw.bytes(on: 400).isEmpty)
    }

    @Test("frames under assembly count against the budget: the stream that goes over is stopped with FRAME_TOO_LARGE")
    func frameAssemblyBudget() {
        var limits = SessionLimits()
        limits.maxIncomingBytes = 300_000
        let (pair, raw) = SessionPair.withRawServer(clientConfig: SessionConfig(limits: limits))
        _ = pair.subscribe("t")
        // Four groups, each with one 100 kB frame that never completes.
        for g in 0..<4 {
            var w = WireWriter()
            w.writeUInt8(0)
            w.writeBytes(GroupHeader(subscribeID: 0, sequence: UInt64(g)).encoded())
            w.writeVarInt(0)
            w.writeVarInt(100_000)
            raw.writeRaw(Int64(7 + 4 * g), w.bytes + [UInt8](repeating: 1, count: 90_000))
        }
        pair.run()
        #expect(pair.client.resourceUsage.incomingBufferedBytes <= limits.maxIncomingBytes)
        #expect(pair.link.client.stopsSent.values.contains(StreamErrorCode.frameTooLarge.wireValue))
        // Their credit went back on arrival: the connection window is not what bounds them.
        #expect(pair.link.client.consumedBytes.values.reduce(0, +) >= 360_000)
    }

    @Test("a group that never ends is bounded: past the group limit it is stopped with GROUP_TOO_LARGE")
    func groupBound() {
        let (pair, raw) = SessionPair.withRawServer()
        let track = TrackProducer(
            name: "t", info: TrackInfo(), clock: pair.scheduler.clock, limits: CacheLimits(maxGroupBytes: 64 * 1024))
        pair.client.subscribe(broadcast: "b", track: track)
        pair.run()
        raw.writeRaw(7, [0x00] + GroupHeader(subscribeID: 0, sequence: 0).encoded())
        // Empty frames cost their bookkeeping too: 10,000 of them are over 64 KiB.
        for _ in 0..<100 { raw.writeRaw(7, [UInt8](repeating: 0, count: 200)) }
        pair.run()
        #expect(pair.link.client.stopsSent[7] == StreamErrorCode.groupTooLarge.wireValue)
        #expect(track.frameCount(of: track.group(sequence: 0)!) < 2000)
        #expect(pair.client.isReady)
    }

    @Test("streams before SETUP: past the limit they are refused")
    func preSetupStreams() {
        var limits = SessionLimits()
        limits.maxPendingStreams = 4
        let log = LimitLog()
        let pair = SessionPair(serverConfig: SessionConfig(limits: limits), connect: false)
        pair.server.delegate = log
        pair.server.connected()
        pair.run()
        for i in 0..<10 { pair.link.client.writeRaw(Int64(4 * i), [0x01, 0x05]) }  // incomplete requests, no SETUP
        pair.run()
        #expect(pair.link.server.resetsSent.count == 6)
        #expect(log.events == [.pendingStreams(4)])
        #expect(pair.server.resourceUsage.incomingBufferedBytes <= 4 * 2)
    }

    @Test("bytes after SETUP on the Setup stream are never taken for a new stream")
    func trailingBytesAfterSetup() {
        let pair = SessionPair(connect: false)
        pair.server.connected()
        pair.run()
        pair.link.client.writeRaw(2, [0x01] + Setup().encoded())
        pair.link.client.writeRaw(2, [0x01] + Setup().encoded(), fin: true)  // would be a "second SETUP"
        pair.run()
        #expect(pair.server.isReady)
    }

    @Test("TRACK and FETCH requests count against their limits (each may start an upstream subscription)")
    func requestLimits() {
        var limits = SessionLimits()
        limits.maxServedTrackRequests = 3
        limits.maxServedFetches = 2
        let (pair, raw, log) = rawClient(limits)
        // A track whose info never comes (a relay waiting upstream): TRACK requests stay open.
        let broadcast = pair.serverBroadcast("b")
        let slow = TrackProducer(name: "slow", info: nil, clock: pair.scheduler.clock)
        broadcast.onTrackRequest { $0 == "slow" ? slow : nil }
        let open = broadcast.createTrack("open")
        let group = open.appendGroup()
        group.write(Bytes("a"), timestamp: 0)  // an open group: FETCH follows it
        for i in 0..<5 { raw.writeRaw(Int64(4 * i), [0x06] + TrackRequest(broadcast: "b", track: "slow").encoded()) }
        for i in 5..<9 {
            raw.writeRaw(Int64(4 * i), [0x03] + Fetch(broadcast: "b", track: "open", group: 0).encoded())
        }
        pair.run()
        let internalCode = StreamErrorCode.internal.wireValue
        #expect(pair.link.server.resetsSent.values.filter { $0 == internalCode }.count == 2 + 2)
        #expect(log.events.contains(.servedTrackRequests(3)))
        #expect(log.events.contains(.servedFetches(2)))
        #expect(pair.server.resourceUsage.servedTrackRequests == 3)
        #expect(pair.server.resourceUsage.servedFetches == 2)
    }

    @Test("announced broadcasts are capped per session: past it the announce stream is reset with INTERNAL")
    func announcementCap() {
        var limits = SessionLimits()
        limits.maxAnnouncements = 3
        let log = LimitLog()
        let pair = SessionPair(clientConfig: SessionConfig(limits: limits), connect: false, rawServer: true)
        pair.client.delegate = log
        pair.client.connected()
        pair.run()
        let raw = pair.link.server
        raw.writeRaw(3, [0x01] + Setup().encoded(), fin: true)
        var events: [AnnounceEvent] = []
        pair.client.requestAnnounces(prefix: "") { events.append($0) }
        pair.run()
        var bytes = AnnounceOk(hopID: 1, activeCount: 0).encoded()
        for i in 0..<5 { bytes += Announcement.start(suffix: "b\(i)", route: AnnounceRoute()).encoded() }
        raw.writeRaw(0, bytes)
        pair.run()
        #expect(events.filter { if case .active = $0 { return true } else { return false } }.count == 3)
        #expect(events.last == .closed(.internal))
        #expect(pair.link.client.resetsSent[0] == StreamErrorCode.internal.wireValue)
        #expect(log.events.contains(.announcements(3)))
        #expect(pair.client.resourceUsage.announcedBroadcasts == 0)
    }

    @Test("an announce watcher that never reads: its backlog is bounded, then the stream is reset with TOO_FAR_BEHIND")
    func announceBacklog() {
        var limits = SessionLimits()
        limits.maxControlBacklogBytes = 2000
        let (pair, raw, log) = rawClient(limits)
        pair.link.server.stalled = true  // nothing the server writes leaves
        raw.writeRaw(0, [0x01] + AnnounceRequest(prefix: "").encoded())
        pair.run()
        for i in 0..<200 { _ = pair.serverBroadcast("room/broadcast-number-\(i)") }
        pair.run()
        #expect(pair.link.server.unsentBytes(0) == 0)  // reset: its queue was dropped
        #expect(log.events.contains(.controlBacklog(2000)))
        pair.link.server.release()
        pair.run()
        #expect(raw.log.contains(.reset(stream: 0, code: StreamErrorCode.tooFarBehind.wireValue)))
    }

    @Test("a group evicted from the cache while still open takes no more frames: readers see EVICTED")
    func evictedOpenGroup() {
        let clock = VirtualClock()
        let track = TrackProducer(name: "t", info: TrackInfo(maxAgeMs: 1000), clock: clock)
        let old = track.appendGroup()
        #expect(old.write(Bytes("a"), timestamp: 0))
        clock.advance(by: 2_000_000_000)
        track.writeSingleFrameGroup(Bytes("new"), timestamp: 2_000_000)
        #expect(!old.write(Bytes("b"), timestamp: 1))
        #expect(old.status == .aborted(.evicted))
    }

    @Test("a DROP of future groups costs nothing; one below the newest makes at most 1024 placeholders")
    func dropPlaceholders() {
        let clock = VirtualClock()
        let track = TrackProducer(name: "t", info: TrackInfo(), clock: clock)
        for i in 0..<3 { _ = track.createGroup(sequence: UInt64(i * 5000)) }
        track.markDropped(20_000...1_000_000, code: .old)
        #expect(track.groups(from: 0).count == 3)
        track.markDropped(1...999, code: .old)
        #expect(track.groups(from: 0).count == 3 + 999)
        track.markDropped(5001...9999, code: .old)  // 4999 placeholders would be too many
        #expect(track.groups(from: 0).count == 3 + 999)
        #expect(track.groupsDropped == 980_001 + 999 + 4999)
    }
}

/// Records the limits a core reports.
final class LimitLog: SessionCoreDelegate {
    var events: [SessionLimitEvent] = []
    func sessionDidSetup(_ session: SessionCore, peer: Setup) {}
    func session(_ session: SessionCore, didReceiveGoaway uri: String) {}
    func session(_ session: SessionCore, didCloseWith reason: SessionCloseReason) {}
    func session(_ session: SessionCore, didHitLimit limit: SessionLimitEvent) { events.append(limit) }
}

// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire

/// A stateful fuzzer of the session core: the input is read as a script that a hostile
/// peer plays against one ``SessionCore`` (either role) over an in-memory transport on a
/// virtual clock — streams of every type opened, fed, split, finished and reset at any
/// point, values at the varint edges, SETUP twice or never, the core's own requests
/// answered with anything, time jumps, a stalled link, stream credit, local writes.
///
/// After every step the invariants are checked: no runaway work, incoming bytes within
/// the session's budget, every received byte either held by a handler or returned as
/// flow-control credit, every request count and queue within its limit; at the end the
/// session is open, or closed with a stated code exactly once. A trap anywhere is a
/// finding too (libFuzzer reports it).
public enum SessionFuzz {
    /// Plays `input`; returns the invariants it broke (empty when none).
    public static func run(_ input: [UInt8]) -> [String] {
        weak var core: SessionCore?
        weak var broadcast: BroadcastProducer?
        weak var track: TrackProducer?
        weak var scheduler: FuzzScheduler?
        var violations: [String]
        do {
            let script = Script(input)
            script.play()
            (core, broadcast, track, scheduler) = (script.core, script.broadcast, script.media, script.scheduler)
            violations = script.violations
        }
        // Everything the script made must be gone with it: what is not is in a reference cycle.
        for (name, alive) in [
            ("session core", core != nil), ("broadcast", broadcast != nil), ("track", track != nil),
            ("scheduler", scheduler != nil),
        ] where alive {
            violations.append("the \(name) outlived the session (a reference cycle)")
        }
        return violations
    }

    /// The limits the fuzzed core runs with: small, so that every one of them is reachable
    /// from a few kilobytes of input.
    static var limits: SessionLimits {
        var l = SessionLimits()
        l.maxServedSubscriptions = 4
        l.maxServedTrackRequests = 4
        l.maxServedFetches = 4
        l.maxServedAnnounces = 2
        l.maxServedProbes = 2
        l.maxControlBacklogBytes = 4096
        l.maxAnnouncements = 16
        l.maxPendingStreams = 8
        l.maxIncomingBytes = 96 * 1024
        l.maxFrameBytes = 32 * 1024
        l.maxUnsentBytes = 64 * 1024
        l.subscriptionSendWindow = 4096
        l.maxPendingGroups = 16
        l.maxOwnRequests = 16
        return l
    }

    /// The cache bounds of the tracks the fuzzed core serves.
    static let cacheLimits = CacheLimits(maxBytes: 256 * 1024, maxGroups: 64, maxGroupBytes: 16 * 1024)
}

final class Script {
    var input: FuzzInput
    let scheduler = FuzzScheduler()
    let transport: FuzzTransport
    let core: SessionCore
    let delegate = FuzzDelegate()
    let origin = Origin()
    let broadcast: BroadcastProducer
    let media: TrackProducer
    let datagrams: TrackProducer
    /// Tracks our own subscriptions write into.
    var received: [TrackProducer] = []
    /// Streams the peer opened (its send side still open), and every stream id it used.
    var peerOpen: [Int64] = []
    var peerDone = Set<Int64>()
    var peerNext: [Bool: Int64]
    var closedStreams = Set<Int64>()
    /// The stream type the core wrote first on each of its own streams (what it asked).
    var connected = false
    var injectedClose = false
    var violations: [String] = []
    let limits = SessionFuzz.limits
    /// WebTransport mode: the peer's bytes reach the core through the HTTP/3 endpoint and router.
    var web: FuzzWebTransport?

    init(_ bytes: [UInt8]) {
        input = FuzzInput(bytes)
        let isClient = input.bool()
        transport = FuzzTransport(
            isClient: isClient, scheduler: scheduler, maxStreams: 4 + input.int(8), datagrams: input.bool())
        var config = SessionConfig(role: nil, path: isClient ? "/anon" : nil, hopID: 7, limits: limits)
        config.serveProbe = input.bool()
        config.setupTimeout = .seconds(10)
        broadcast = BroadcastProducer(path: "b", clock: scheduler.clock)
        media = broadcast.createTrack(
            "t", info: TrackInfo(priority: 1, maxAgeMs: 5000), limits: SessionFuzz.cacheLimits)
        datagrams = broadcast.createTrack("d", limits: SessionFuzz.cacheLimits)
        let clock = scheduler.clock
        broadcast.onTrackRequest { name in
            // As a relay does: unknown names become tracks whose info is not known yet.
            name.hasPrefix("x")
                ? TrackProducer(name: name, info: nil, clock: clock, limits: SessionFuzz.cacheLimits) : nil
        }
        origin.publish(broadcast)
        core = SessionCore(config: config, transport: transport, scheduler: scheduler, publishOrigin: origin)
        core.delegate = delegate
        transport.core = core
        // The peer opens the other role's streams.
        peerNext = [true: isClient ? 1 : 0, false: isClient ? 3 : 2]
        if input.int(4) == 0 { web = FuzzWebTransport(transport: transport, core: core, isClient: isClient) }
    }

    func play() {
        if input.bool() { connect() }
        var steps = 0
        while !input.isAtEnd && steps < 400 && violations.isEmpty {
            steps += 1
            scheduler.resetSteps()
            step()
            settle()
            check()
        }
        _ = scheduler.advance(by: 30_000_000_000)
        check()
        finalCheck()
    }

    private func connect() {
        guard !connected else { return }
        connected = true
        if let web { web.start() } else { core.connected() }
    }

    private func step() {
        switch input.int(web == nil ? 16 : 18) {
        case 0: openPeerStream(bidirectional: false)
        case 1, 2: openPeerStream(bidirectional: true)
        case 3, 4: sendMore()
        case 5: peerReset()
        case 6: peerStopSending()
        case 7: sendDatagram()
        case 8: advanceTime()
        case 9: creditAndClosing()
        case 10, 11: apiCall()
        case 12: localWrite()
        case 13:
            transport.stalled = input.bool()
            if !transport.stalled { transport.drain() }
        case 14:
            if input.int(8) == 0 {
                injectedClose = true
                core.transportClosed(
                    input.bool() ? .remote(SessionErrorCode(rawValue: input.value()), "peer") : .transport("gone"))
            } else {
                connect()
            }
        case 16: webTransportStream()
        case 17: webTransportConnect()
        default: answerOwnRequest()
        }
    }

    private func settle() {
        if !scheduler.run() { violations.append("runaway work: more than \(FuzzScheduler.maxSteps) scheduled items") }
    }

    // MARK: The peer's streams

    private func openPeerStream(bidirectional: Bool) {
        var bytes = bidirectional ? request() : uniStream()
        if let web { bytes = web.preamble(bidirectional: bidirectional, &input) + bytes }
        openPeerStream(bidirectional: bidirectional, bytes)
    }

    /// The peer opens a stream with `bytes` (its first).
    func openPeerStream(bidirectional: Bool, _ bytes: [UInt8]) {
        guard peerOpen.count < 64 else { return }
        let id = peerNext[bidirectional, default: 0]
        peerNext[bidirectional] = id + 4
        peerOpen.append(id)
        // Over WebTransport a stream is the core's only once its preamble was read.
        if web == nil, input.bool() { core.streamOpened(id) }
        deliver(id, bytes, fin: input.int(4) == 0)
    }

    private func sendMore() {
        guard let stream = anySendableStream() else { return }
        let bytes: [UInt8]
        switch input.int(4) {
        case 0: bytes = input.bytes(max: 64)
        case 1: bytes = frames(count: 1 + input.int(3))
        case 2: bytes = response(on: stream)
        default: bytes = SubscribeUpdate(range: range()).encoded()
        }
        deliver(stream, bytes, fin: input.int(3) == 0)
    }

    /// A stream the peer may still send on: one it opened, or a bidi stream the core opened.
    private func anySendableStream() -> Int64? {
        let own = transport.ownStreams.filter { !StreamID.isUnidirectional($0) }
        let candidates = (peerOpen + own).filter { !peerDone.contains($0) && !closedStreams.contains($0) }
        guard !candidates.isEmpty else { return nil }
        return candidates[input.int(candidates.count)]
    }

    /// Bytes arrive, whole or split in up to three pieces (FIN on the last).
    func deliver(_ stream: Int64, _ bytes: [UInt8], fin: Bool) {
        guard !peerDone.contains(stream), !closedStreams.contains(stream) else { return }
        var pieces: [[UInt8]] = [bytes]
        if bytes.count > 1, input.bool() {
            let cut = 1 + input.int(bytes.count - 1)
            pieces = [Array(bytes[..<cut]), Array(bytes[cut...])]
        }
        for (i, piece) in pieces.enumerated() {
            let last = i == pieces.count - 1
            transport.delivered += piece.count
            piece.withUnsafeBytes { data in
                if let web {
                    web.received(stream, data, fin: fin && last)
                } else {
                    core.received(stream: stream, data: data, fin: fin && last)
                }
            }
            _ = scheduler.run()
        }
        if fin { peerDone.insert(stream) }
    }

    private func peerReset() {
        guard let stream = anySendableStream() else { return }
        peerDone.insert(stream)
        if let web { web.reset(stream, code: code()) } else { core.streamReset(stream: stream, wireCode: code()) }
    }

    private func peerStopSending() {
        let all = transport.ownStreams + peerOpen.filter { !StreamID.isUnidirectional($0) }
        guard !all.isEmpty else { return }
        core.stopSending(stream: all[input.int(all.count)], wireCode: code())
    }

    /// A RESET_STREAM / STOP_SENDING code: mapped, raw, or the Rust stack's raw 0.
    private func code() -> UInt64 {
        switch input.int(3) {
        case 0: return StreamErrorCode(rawValue: input.value()).wireValue
        case 1: return 0
        default: return input.value()
        }
    }

    private func sendDatagram() {
        var w = WireWriter()
        w.writeVarInt(UInt64(input.int(4)))
        w.writeVarInt(input.value())
        w.writeVarInt(input.value())
        w.writeBytes(input.bytes(max: 32))
        var bytes = input.bool() ? w.bytes : input.bytes(max: 16)
        if let web {
            bytes = (input.int(4) == 0 ? input.bytes(max: 2) : [0]) + bytes
            bytes.withUnsafeBytes { web.datagram($0) }
        } else {
            bytes.withUnsafeBytes { core.datagramReceived($0) }
        }
    }

    private func advanceTime() {
        let steps: [UInt64] = [0, 1_000_000, 20_000_000, 100_000_000, 1_000_000_000, 10_000_000_000, 60_000_000_000]
        if !scheduler.advance(by: steps[input.int(steps.count)]) {
            violations.append("runaway work while time advanced")
        }
    }

    /// Stream credit from the peer, and streams closing on both sides (as QUIC reports them).
    private func creditAndClosing() {
        switch input.int(3) {
        case 0:
            core.streamCreditAvailable(bidirectional: input.bool())
        case 1:
            // One of our streams is done on both sides: the transport retires it.
            let done = transport.ownStreams.filter {
                transport.sendDone.contains($0) && (StreamID.isUnidirectional($0) || peerDone.contains($0))
                    && !closedStreams.contains($0)
            }
            guard !done.isEmpty else { return }
            let stream = done[input.int(done.count)]
            closedStreams.insert(stream)
            if let web { web.closed(stream) } else { core.streamClosed(stream: stream) }
            transport.retire(stream)
        default:
            // One of the peer's streams is done on both sides.
            let done = peerOpen.filter {
                peerDone.contains($0) && (StreamID.isUnidirectional($0) || transport.sendDone.contains($0))
            }
            guard !done.isEmpty else { return }
            let stream = done[input.int(done.count)]
            closedStreams.insert(stream)
            peerOpen.removeAll { $0 == stream }
            if let web { web.closed(stream) } else { core.streamClosed(stream: stream) }
        }
    }

    // MARK: The core's own side

    private func apiCall() {
        switch input.int(8) {
        case 0, 1:
            let track = TrackProducer(
                name: trackName(), info: input.bool() ? nil : TrackInfo(), clock: scheduler.clock,
                limits: SessionFuzz.cacheLimits)
            received.append(track)
            core.subscribe(broadcast: broadcastName(), track: track, range: range())
        case 2: core.requestAnnounces(prefix: input.name()) { _ in }
        case 3:
            core.fetch(
                Fetch(broadcast: broadcastName(), track: trackName(), group: smallOrAny(), frameStart: smallOrAny())
            ) { _ in }
        case 4: core.trackInfo(broadcast: broadcastName(), track: trackName()) { _ in }
        case 5: core.requestProbe { _ in }
        case 6: core.sendGoaway(uri: input.name())
        default:
            if input.int(8) == 0 { core.close(SessionErrorCode(rawValue: UInt64(input.int(0x20))), reason: "fuzz") }
        }
    }

    private func localWrite() {
        switch input.int(6) {
        case 0, 1:
            let group = media.appendGroup()
            for _ in 0..<input.int(4) {
                group.write(
                    Bytes(input.bytes(max: 2000)), timestamp: input.bool() ? UInt64(input.int(1000)) : input.value())
            }
            if input.bool() {
                group.finish()
            } else if input.bool() {
                group.abort(StreamErrorCode(rawValue: input.value()))
            }
        case 2:
            if let group = media.createGroup(sequence: input.value()) {
                group.write(Bytes(input.bytes(max: 64)), timestamp: input.value())
                group.finish()
            }
        case 3: datagrams.writeDatagram(Bytes(input.bytes(max: 64)), timestamp: input.value())
        case 4:
            if input.int(8) == 0 {
                input.bool() ? media.finish() : media.abort(StreamErrorCode(rawValue: input.value()))
            }
        default:
            if let track = received.last {
                let start = smallOrAny()
                track.markDropped(start...start + UInt64(input.int(8)), code: .old)
            }
        }
    }

    // MARK: The HTTP/3 side (WebTransport mode)

    /// The peer opens an HTTP/3 stream of its own: control, QPACK, push or unknown, or a
    /// WebTransport stream of another session.
    private func webTransportStream() {
        guard let web else { return }
        let bidirectional = input.int(4) == 0
        openPeerStream(bidirectional: bidirectional, web.http3Stream(bidirectional: bidirectional, &input))
    }

    /// The CONNECT: sent by the peer (the core is the server) or answered by it (the core is
    /// the client), or either side's capsules after it.
    private func webTransportConnect() {
        guard let web else { return }
        if let session = web.router.endpoint.sessionID, transport.isClient || input.bool() {
            deliver(session, web.connectStreamBytes(&input), fin: input.int(6) == 0)
        } else if !transport.isClient {
            openPeerStream(bidirectional: true, web.connectStreamBytes(&input))
        }
    }

    private func answerOwnRequest() {
        let own = transport.ownStreams.filter {
            !StreamID.isUnidirectional($0) && !peerDone.contains($0) && !closedStreams.contains($0)
        }
        guard !own.isEmpty else { return }
        let stream = own[input.int(own.count)]
        deliver(stream, response(on: stream), fin: input.int(4) == 0)
    }

    // MARK: Invariants

    private func check() {
        guard violations.isEmpty else { return }
        let usage = core.resourceUsage
        if usage.incomingBufferedBytes > limits.maxIncomingBytes {
            violations.append(
                "incoming bytes \(usage.incomingBufferedBytes) over the budget \(limits.maxIncomingBytes)")
        }
        let held = usage.incomingCreditHeldBytes + (web?.router.heldBytes ?? 0)
        if !core.isClosed, transport.delivered - transport.consumedBytes != held {
            violations.append(
                "credit: \(transport.delivered) delivered, \(transport.consumedBytes) returned, but handlers hold \(held)"
            )
        }
        if let web, web.router.endpoint.trackedStreams > 4 * 64 + 8 {
            violations.append("the HTTP/3 side tracks \(web.router.endpoint.trackedStreams) streams")
        }
        if usage.servedSubscriptions > limits.maxServedSubscriptions
            || usage.servedTrackRequests > limits.maxServedTrackRequests
            || usage.servedFetches > limits.maxServedFetches || usage.servedAnnounces > limits.maxServedAnnounces
            || usage.servedProbes > limits.maxServedProbes
            || usage.announcedBroadcasts > limits.maxAnnouncements
        {
            violations.append("a request count is over its limit: \(usage)")
        }
        if usage.pendingGroupOpens > limits.maxPendingGroups {
            violations.append(
                "\(usage.pendingGroupOpens) group streams wait for credit (limit \(limits.maxPendingGroups))")
        }
        let streamBound = max(
            limits.maxControlBacklogBytes, limits.subscriptionSendWindow + SessionFuzz.cacheLimits.maxGroupBytes)
        for (stream, bytes) in transport.unsent where bytes > streamBound + 4096 {
            violations.append("stream \(stream) has \(bytes) bytes queued (bound \(streamBound))")
            break
        }
        if transport.closed != nil && !core.isClosed {
            violations.append("the transport was closed but the session is not")
        }
        if delegate.closes > 1 { violations.append("the session reported its close \(delegate.closes) times") }
    }

    private func finalCheck() {
        guard violations.isEmpty, let reason = core.closeReason else { return }
        if delegate.closes != 1 { violations.append("closed, but the delegate heard \(delegate.closes) closes") }
        switch reason {
        case .local(let code, _):
            if code.description.hasPrefix("error 0x") && code.rawValue >= 0x20 {
                violations.append("closed with an unstated code \(code.rawValue)")
            }
        case .remote, .transport:
            if !injectedClose && !(web?.closedByPeer ?? false) {
                violations.append("closed by a peer/transport close the script never sent: \(reason)")
            }
        }
    }
}

/// Counts what the core reports.
final class FuzzDelegate: SessionCoreDelegate {
    var closes = 0
    func sessionDidSetup(_ session: SessionCore, peer: Setup) {}
    func session(_ session: SessionCore, didReceiveGoaway uri: String) {}
    func session(_ session: SessionCore, didCloseWith reason: SessionCloseReason) { closes += 1 }
}

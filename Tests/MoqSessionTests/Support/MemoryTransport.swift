// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire

/// What one side of a ``MemoryLink`` observed arriving from the other.
enum LinkEvent: Equatable {
    case data(stream: Int64, bytes: [UInt8], fin: Bool)
    case reset(stream: Int64, code: UInt64)
    case stopSending(stream: Int64, code: UInt64)
    case datagram([UInt8])
    case closed(code: UInt64, reason: String)
}

/// An in-memory QUIC connection pair with stream numbering, stream credit,
/// datagrams and an optional stalled link. Deliveries are scheduled on the
/// shared ``VirtualScheduler``; nothing runs until the test drains it.
final class MemoryLink {
    let scheduler: VirtualScheduler
    let client: MemoryTransport
    let server: MemoryTransport

    init(scheduler: VirtualScheduler, maxStreams: Int = 100, datagrams: Bool = true) {
        self.scheduler = scheduler
        client = MemoryTransport(isClient: true, scheduler: scheduler, maxStreams: maxStreams, datagrams: datagrams)
        server = MemoryTransport(isClient: false, scheduler: scheduler, maxStreams: maxStreams, datagrams: datagrams)
        client.peer = server
        server.peer = client
    }
}

final class MemoryTransport: SessionTransport, @unchecked Sendable {
    let isClient: Bool
    let scheduler: VirtualScheduler
    weak var peer: MemoryTransport?
    /// The core driven by this side (nil for a raw test peer).
    var core: (any TransportEventSink)?
    /// Everything that arrived from the peer, in order.
    private(set) var log: [LinkEvent] = []
    /// When true, writes queue here instead of being delivered (a congested link).
    var stalled = false
    private var stalledWrites: [(Int64, Bytes, Bool)] = []
    /// ``stalledWrites`` summed per stream and in all (asking costs what it costs a real transport).
    private var unsentByStream: [Int64: Int] = [:]
    private var unsentTotal = 0
    private(set) var sendOrders: [Int64: Int64] = [:]
    private(set) var resetsSent: [Int64: UInt64] = [:]
    private(set) var stopsSent: [Int64: UInt64] = [:]
    private(set) var closed: (code: UInt64, reason: String)?

    private var nextBidi: Int64
    private var nextUni: Int64
    private let maxStreams: Int
    /// Streams we opened that the peer has not fully closed (credit in use), per kind.
    private var openBidi = Set<Int64>()
    private var openUni = Set<Int64>()
    /// Per stream: has each direction ended?
    private var sendDone = Set<Int64>()
    private var receiveDone = Set<Int64>()
    private var seen = Set<Int64>()
    let datagrams: Bool

    init(isClient: Bool, scheduler: VirtualScheduler, maxStreams: Int, datagrams: Bool) {
        self.isClient = isClient
        self.scheduler = scheduler
        self.maxStreams = maxStreams
        self.datagrams = datagrams
        nextBidi = isClient ? 0 : 1
        nextUni = isClient ? 2 : 3
    }

    // MARK: SessionTransport

    func openStream(bidirectional: Bool) -> Int64? {
        if bidirectional {
            guard openBidi.count < maxStreams else { return nil }
            defer { nextBidi += 4 }
            openBidi.insert(nextBidi)
            return nextBidi
        }
        guard openUni.count < maxStreams else { return nil }
        defer { nextUni += 4 }
        openUni.insert(nextUni)
        receiveDone.insert(nextUni)  // nothing to receive on our own uni stream
        return nextUni
    }

    func write(_ stream: Int64, _ data: Bytes, fin: Bool) {
        guard closed == nil, !sendDone.contains(stream) else { return }
        if fin { sendDone.insert(stream) }
        defer { if fin { checkClosed(stream) } }
        if stalled {
            stalledWrites.append((stream, data, fin))
            unsentByStream[stream, default: 0] += data.count
            unsentTotal += data.count
            return
        }
        deliver(stream, data, fin)
    }

    private func deliver(_ stream: Int64, _ data: Bytes, _ fin: Bool) {
        let bytes = data.array
        scheduler.execute { [weak self] in self?.peer?.arrive(stream: stream, bytes: bytes, fin: fin) }
    }

    func finish(_ stream: Int64) { write(stream, Bytes(), fin: true) }

    /// Flow-control credit the core returned, per stream.
    private(set) var consumedBytes: [Int64: Int] = [:]
    func consumed(_ stream: Int64, bytes: Int) { consumedBytes[stream, default: 0] += bytes }

    func resetStream(_ stream: Int64, code: UInt64) {
        guard closed == nil, !sendDone.contains(stream) || unsentByStream[stream] != nil else {
            return
        }
        sendDone.insert(stream)
        defer { checkClosed(stream) }
        resetsSent[stream] = code
        stalledWrites.removeAll { $0.0 == stream }
        unsentTotal -= unsentByStream.removeValue(forKey: stream) ?? 0
        scheduler.execute { [weak self] in self?.peer?.arriveReset(stream: stream, code: code) }
    }

    func stopSending(_ stream: Int64, code: UInt64) {
        guard closed == nil else { return }
        stopsSent[stream] = code
        scheduler.execute { [weak self] in self?.peer?.arriveStop(stream: stream, code: code) }
    }

    func setSendOrder(_ stream: Int64, _ order: Int64) { sendOrders[stream] = order }

    /// How often the core asked for one stream's unsent bytes (its cost grows with the calls).
    private(set) var unsentBytesQueries = 0

    func unsentBytes(_ stream: Int64) -> Int {
        unsentBytesQueries += 1
        return unsentByStream[stream] ?? 0
    }

    var totalUnsentBytes: Int { unsentTotal }

    /// The threshold the core asked to hear about (see ``release(bySendOrder:)``).
    private(set) var drainThreshold: Int?
    func notifyWhenUnsent(below threshold: Int) {
        drainThreshold = max(drainThreshold ?? 0, threshold)
        if totalUnsentBytes < threshold { signalDrained() }
    }

    private func signalDrained() {
        guard drainThreshold != nil else { return }
        drainThreshold = nil
        scheduler.execute { [weak self] in self?.core?.sendBufferDrained() }
    }

    func sendDatagram(_ data: Bytes) -> Bool {
        guard datagrams, closed == nil else { return false }
        let bytes = data.array
        scheduler.execute { [weak self] in self?.peer?.arriveDatagram(bytes) }
        return true
    }

    var maxDatagramPayload: Int { datagrams ? 1200 : 0 }

    func close(code: UInt64, reason: String) {
        guard closed == nil else { return }
        closed = (code, reason)
        scheduler.execute { [weak self] in self?.peer?.arriveClose(code: code, reason: reason) }
    }

    var transportEstimates = TransportEstimates(smoothedRTTMicros: 2000, sendRateBps: 50_000_000)

    // MARK: Link control

    /// Delivers everything that queued while stalled, and unstalls. With
    /// `bySendOrder`, whole streams go out highest send order first, as a QUIC
    /// scheduler drains a backlog (control streams, then the newest groups).
    func release(bySendOrder: Bool = false) {
        stalled = false
        var pending = stalledWrites
        stalledWrites = []
        unsentByStream = [:]
        unsentTotal = 0
        if bySendOrder {
            let order = pending.map(\.0).reduce(into: [Int64]()) { if !$0.contains($1) { $0.append($1) } }
            let ranked = order.enumerated().sorted {
                let a = sendOrders[$0.element] ?? 0
                let b = sendOrders[$1.element] ?? 0
                return a != b ? a > b : $0.offset < $1.offset
            }.map(\.element)
            pending = ranked.flatMap { stream in pending.filter { $0.0 == stream } }
        }
        for (s, d, f) in pending { deliver(s, d, f) }
        signalDrained()
    }

    // MARK: Arrivals (from the peer)

    private func isPeerStream(_ stream: Int64) -> Bool { StreamID.isServerInitiated(stream) == isClient }

    private func arrive(stream: Int64, bytes: [UInt8], fin: Bool) {
        guard closed == nil else { return }
        log.append(.data(stream: stream, bytes: bytes, fin: fin))
        if isPeerStream(stream), seen.insert(stream).inserted {
            if StreamID.isUnidirectional(stream) { sendDone.insert(stream) }
            core?.streamOpened(stream)
        }
        bytes.withUnsafeBytes { core?.received(stream: stream, data: $0, fin: fin) }
        if fin { receiveDone.insert(stream); checkClosed(stream) }
    }

    private func arriveReset(stream: Int64, code: UInt64) {
        guard closed == nil else { return }
        log.append(.reset(stream: stream, code: code))
        if isPeerStream(stream), seen.insert(stream).inserted {
            if StreamID.isUnidirectional(stream) { sendDone.insert(stream) }
            core?.streamOpened(stream)
        }
        core?.streamReset(stream: stream, wireCode: code)
        receiveDone.insert(stream)
        checkClosed(stream)
    }

    private func arriveStop(stream: Int64, code: UInt64) {
        guard closed == nil else { return }
        log.append(.stopSending(stream: stream, code: code))
        core?.stopSending(stream: stream, wireCode: code)
    }

    private func arriveDatagram(_ bytes: [UInt8]) {
        guard closed == nil else { return }
        log.append(.datagram(bytes))
        bytes.withUnsafeBytes { core?.datagramReceived($0) }
    }

    private func arriveClose(code: UInt64, reason: String) {
        guard closed == nil else { return }
        log.append(.closed(code: code, reason: reason))
        closed = (code, reason)
        core?.transportClosed(.remote(SessionErrorCode(rawValue: code), reason))
    }

    /// When both directions of a stream are done here, it closes on both sides and the
    /// opener gets its credit back.
    private var closedStreams = Set<Int64>()

    private func checkClosed(_ stream: Int64) {
        guard receiveDone.contains(stream), sendDone.contains(stream), closedStreams.insert(stream).inserted else {
            return
        }
        core?.streamClosed(stream: stream)
        let opener = isPeerStream(stream) ? peer : self
        scheduler.execute { [weak opener] in opener?.creditReturned(stream) }
    }

    private func creditReturned(_ stream: Int64) {
        if StreamID.isUnidirectional(stream) {
            if openUni.remove(stream) != nil { core?.streamCreditAvailable(bidirectional: false) }
        } else {
            if openBidi.remove(stream) != nil {
                core?.streamClosed(stream: stream)
                core?.streamCreditAvailable(bidirectional: true)
            }
        }
    }

    // MARK: Raw-peer helpers

    /// The bytes received on `stream` so far, concatenated.
    func bytes(on stream: Int64) -> [UInt8] {
        log.reduce(into: []) { out, e in
            if case .data(let s, let b, _) = e, s == stream { out += b }
        }
    }

    /// Streams the peer opened, in order of first arrival.
    var peerStreams: [Int64] {
        var out: [Int64] = []
        for e in log {
            if case .data(let s, _, _) = e, isPeerStream(s), !out.contains(s) { out.append(s) }
        }
        return out
    }

    /// Writes raw bytes (as a raw peer).
    func writeRaw(_ stream: Int64, _ bytes: [UInt8], fin: Bool = false) { write(stream, Bytes(bytes), fin: fin) }
}

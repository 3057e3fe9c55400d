// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire

/// The connection a fuzzed core talks through: it honours what QUIC guarantees (stream
/// numbering, stream credit, nothing sent after FIN or reset) and records what the core
/// does with it, so that invariants can be checked: credit returned, bytes queued, closes.
/// Single-threaded: used only on the fuzz script's thread (the scheduler runs work there).
final class FuzzTransport: SessionTransport, @unchecked Sendable {
    let isClient: Bool
    let scheduler: FuzzScheduler
    weak var core: (any TransportEventSink)?

    /// Our streams the peer may still receive on, per kind, against its credit.
    private var openOwn: [Bool: Set<Int64>] = [true: [], false: []]
    private var nextStream: [Bool: Int64]
    let maxStreams: Int
    /// Streams the core opened, in order.
    private(set) var ownStreams: [Int64] = []
    /// Streams whose send side the core finished or reset.
    private(set) var sendDone = Set<Int64>()
    /// When true, writes queue as unsent (a congested link); otherwise they leave at once.
    var stalled = false
    private(set) var unsent: [Int64: Int] = [:]
    private(set) var totalUnsent = 0
    private var drainThreshold: Int?
    /// Bytes handed to the core, and credit it returned (what it holds is the difference).
    var delivered = 0
    private(set) var consumedBytes = 0
    private(set) var closed: (code: UInt64, reason: String)?
    private(set) var datagramsSent = 0
    let datagrams: Bool

    init(isClient: Bool, scheduler: FuzzScheduler, maxStreams: Int, datagrams: Bool) {
        self.isClient = isClient
        self.scheduler = scheduler
        self.maxStreams = maxStreams
        self.datagrams = datagrams
        nextStream = [true: isClient ? 0 : 1, false: isClient ? 2 : 3]
    }

    func openStream(bidirectional: Bool) -> Int64? {
        guard closed == nil, openOwn[bidirectional, default: []].count < maxStreams else { return nil }
        let id = nextStream[bidirectional, default: 0]
        nextStream[bidirectional] = id + 4
        openOwn[bidirectional, default: []].insert(id)
        ownStreams.append(id)
        return id
    }

    /// The peer closed one of our streams (both sides done): its credit comes back.
    func retire(_ stream: Int64) {
        let bidi = !StreamID.isUnidirectional(stream)
        if openOwn[bidi]?.remove(stream) != nil {
            scheduler.execute { [weak self] in self?.core?.streamCreditAvailable(bidirectional: bidi) }
        }
    }

    func write(_ stream: Int64, _ data: Bytes, fin: Bool) {
        guard closed == nil, !sendDone.contains(stream) else { return }
        if fin { sendDone.insert(stream) }
        if stalled && !data.isEmpty {
            unsent[stream, default: 0] += data.count
            totalUnsent += data.count
        }
    }

    func finish(_ stream: Int64) { write(stream, Bytes(), fin: true) }

    func consumed(_ stream: Int64, bytes: Int) { consumedBytes += bytes }

    func resetStream(_ stream: Int64, code: UInt64) {
        guard closed == nil else { return }
        sendDone.insert(stream)
        totalUnsent -= unsent.removeValue(forKey: stream) ?? 0
    }

    func stopSending(_ stream: Int64, code: UInt64) {}

    func setSendOrder(_ stream: Int64, _ order: Int64) {}

    func unsentBytes(_ stream: Int64) -> Int { unsent[stream] ?? 0 }

    var totalUnsentBytes: Int { totalUnsent }

    func notifyWhenUnsent(below threshold: Int) {
        drainThreshold = max(drainThreshold ?? 0, threshold)
        signalIfDrained()
    }

    /// The link takes everything queued.
    func drain() {
        unsent = [:]
        totalUnsent = 0
        signalIfDrained()
    }

    private func signalIfDrained() {
        guard let threshold = drainThreshold, totalUnsent < threshold else { return }
        drainThreshold = nil
        scheduler.execute { [weak self] in self?.core?.sendBufferDrained() }
    }

    func sendDatagram(_ data: Bytes) -> Bool {
        guard datagrams, closed == nil else { return false }
        datagramsSent += 1
        return true
    }

    var maxDatagramPayload: Int { datagrams ? 1200 : 0 }

    func close(code: UInt64, reason: String) {
        if closed == nil { closed = (code, reason) }
    }

    var transportEstimates: TransportEstimates { TransportEstimates(smoothedRTTMicros: 2000, sendRateBps: 8_000_000) }
}

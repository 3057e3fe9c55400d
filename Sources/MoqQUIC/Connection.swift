// SPDX-License-Identifier: MIT
// One QUIC connection over ngtcp2: receive path, write loop with send-order scheduling, stream and
// connection credit, datagrams, closing/draining periods. Loop thread only.
internal import CNgtcp2
internal import Glibc
public import MoqBase
import Synchronization

/// A QUIC connection, client or server side.
///
/// Thread rule: every method and property must be used on ``loop``'s thread (inside a delegate call,
/// or through ``QUICEventLoop/execute(_:)``). Debug builds assert this.
///
/// Lifetime: the loop keeps the connection alive until it has closed and its closing or draining period has
/// ended. The ``delegate`` is held strongly until ``QUICConnectionDelegate/quicConnection(_:didCloseWith:)``
/// has been delivered, then released, so a delegate that references its connection forms no lasting cycle.
public final class QUICConnection: @unchecked Sendable, DatagramReceiver {
    /// The loop this connection lives on.
    public let loop: QUICEventLoop
    /// True for the side that started the handshake.
    public let isClient: Bool
    /// Receives this connection's events. Strong until `didCloseWith` has been delivered, then nil.
    public var delegate: (any QUICConnectionDelegate)?
    /// The application protocol chosen in the handshake; nil before ``QUICConnectionDelegate/quicConnectionDidConnect(_:)``.
    public internal(set) var negotiatedALPN: String?
    /// Lowercase hex SHA-256 of the peer's leaf certificate DER (clients; nil before the handshake completes).
    public internal(set) var peerCertificateFingerprint: String?

    enum Phase {
        case starting, handshaking, established, closing, draining, closed

        /// The application has heard `didCloseWith` (closing and draining report on entry).
        var hasReported: Bool { self == .closing || self == .draining || self == .closed }
    }

    /// A close waiting for the write path.
    enum PendingClose {
        /// CONNECTION_CLOSE with an application error.
        case application(code: UInt64, reason: String)
        /// CONNECTION_CLOSE with a TLS alert (crypto error), for `reason`.
        case tlsAlert(UInt8, reason: QUICCloseReason)
    }
    var phase: Phase = .starting {
        didSet { loop.expiryMayChange(self) }
    }

    let settings: QUICSettings
    var socket: UDPSocket?
    /// The peer's address of the current path.
    let remote = SocketAddress()
    weak var server: QUICServer?
    /// The loop of a sharded server this connection lives on (its connection IDs say so).
    var shard = QUICShard.single
    var conn: OpaquePointer?
    var tls: TLSSession?
    /// Client TLS configuration, handed to the TLS session when the client starts.
    var tlsClient: (config: TLSClientConfiguration, host: String)?
    let connRef: UnsafeMutablePointer<ngtcp2_crypto_conn_ref>
    let pathStorage: UnsafeMutablePointer<ngtcp2_path_storage>
    let txBuffer: UnsafeMutableRawBufferPointer
    /// The vectors one stream's data is gathered into for ngtcp2 (reused by every write).
    let txVecs: UnsafeMutableBufferPointer<ngtcp2_vec>
    /// The streams with something to send, ordered for one write (reused by every write).
    var txCandidates: [StreamState] = []
    var isDirty = false
    /// This connection's place in the loop's ``ExpiryHeap`` (nil: not in it).
    var expirySlot: ExpiryHeap.Slot?
    /// Queued for the loop to recompute its expiry (``QUICEventLoop/expiryMayChange(_:)``).
    var expiryStale = false
    /// Server CIDs routed to this connection (server side).
    var cidKeys: Set<CIDKey> = []
    /// The client's address without its port (server side): handshakes are counted per source.
    var sourceKey: [UInt8] = []
    /// True until the handshake completes (or the connection ends).
    var isHandshaking: Bool { phase == .starting || phase == .handshaking }

    var streams: [Int64: StreamState] = [:]
    /// Bytes written to streams and not yet handed to ngtcp2 (all streams).
    let unsent = UnsentTotal()
    /// Set by ``notifyWhenUnsent(below:)``: the delegate hears once unsent bytes fall below it.
    var drainThreshold: Int?
    var sendable: Set<Int64> = []
    var resetCreditReturned: Set<Int64> = []
    var streamSequence: UInt64 = 0
    var datagrams: [Bytes] = []
    var datagramHead = 0
    /// Datagrams (or segmented batches) that met a full socket, sent first when it drains.
    var pendingPackets: [(bytes: [UInt8], segment: Int, to: SocketAddress?)] = []
    /// Packets written by ngtcp2 and not yet sent: one segmentation-offload batch at the start of
    /// `txBuffer`, `batchCount` datagrams of `batchSegment` bytes (the last may be shorter).
    var batchBytes = 0
    var batchSegment = 0
    var batchCount = 0
    /// A close asked for (by the application, or by a callback that found a TLS-level failure),
    /// carried out by the next flush(). A TLS failure replaces an application close.
    var pendingClose: PendingClose?
    var closePacket: [UInt8] = []
    var closeDeadline: UInt64 = .max {
        didSet { loop.expiryMayChange(self) }
    }
    var closeReason: QUICCloseReason?
    var counters = QUICStats()
    /// Readable from any thread: a player measuring what its path carries samples it ten times a second.
    private let receivedBytesCounter = Atomic<UInt64>(0)
    /// UDP payload bytes received so far (any thread).
    public var receivedBytesTotal: UInt64 { receivedBytesCounter.load(ordering: .relaxed) }
    var lostOnClosedStreams: UInt64 = 0
    var rng: UInt64
    var sendRate = RateMeter()
    var receiveRate = RateMeter()

    init(loop: QUICEventLoop, isClient: Bool, settings: QUICSettings, delegate: (any QUICConnectionDelegate)?) {
        self.loop = loop
        self.isClient = isClient
        self.settings = settings
        self.delegate = delegate
        connRef = .allocate(capacity: 1)
        pathStorage = .allocate(capacity: 1)
        ngtcp2_path_storage_zero(pathStorage)
        txBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        txVecs = .allocate(capacity: 16)
        rng = settings.testLoss.seed ^ (isClient ? 0x9e37_79b9_7f4a_7c15 : 0x5851_f42d_4c95_7f2d)
        connRef.initialize(
            to: ngtcp2_crypto_conn_ref(
                get_conn: { ref in
                    guard let ud = ref?.pointee.user_data else { return nil }
                    return Unmanaged<QUICConnection>.fromOpaque(ud).takeUnretainedValue().conn
                }, user_data: nil))
        connRef.pointee.user_data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        if let conn { ngtcp2_conn_del(conn) }
        tls = nil
        connRef.deallocate()
        pathStorage.deallocate()
        txBuffer.deallocate()
        txVecs.deallocate()
    }

    // MARK: - Public API (loop thread only)

    /// The peer's address, e.g. "127.0.0.1:4443".
    public var remoteAddress: String { remote.description }

    /// Opens a stream. Returns nil before the handshake completes, after close, or when the peer's
    /// MAX_STREAMS credit is exhausted (``QUICConnectionDelegate/quicConnection(_:streamCreditAvailable:)`` follows).
    public func openStream(bidirectional: Bool) -> Int64? {
        loop.assertOnLoop()
        guard phase == .established, let conn else { return nil }
        var id: Int64 = -1
        let rc =
            bidirectional ? ngtcp2_conn_open_bidi_stream(conn, &id, nil) : ngtcp2_conn_open_uni_stream(conn, &id, nil)
        guard rc == 0 else { return nil }
        streams[id] = StreamState(id: id, peerInitiated: false, sequence: nextSequence(), total: unsent)
        return id
    }

    /// Queues `data` on `stream` (and a FIN after it if `fin`). Never blocks; `data` is kept, not copied,
    /// until the peer acknowledges it. Ignored for unknown, reset or finished streams.
    public func write(_ stream: Int64, _ data: Bytes, fin: Bool = false) {
        loop.assertOnLoop()
        guard isOpen, let s = streams[stream], !s.sendClosed, !s.finQueued else { return }
        if s.peerInitiated && !isBidirectional(stream) { return }  // the peer's uni stream: receive only
        s.append(data)
        if fin { s.finQueued = true }
        if s.wantsToSend || s.blocked {
            sendable.insert(stream)
            loop.markDirty(self)
        }
    }

    /// Queues a FIN after everything already written to `stream`.
    public func finish(_ stream: Int64) {
        write(stream, Bytes(), fin: true)
    }

    /// Returns flow-control credit for `bytes` received on `stream` that the application has finished
    /// with (only with ``QUICSettings/automaticFlowControlCredit`` off). Bytes of a stream that is already
    /// closed still count for the connection window.
    public func consume(_ stream: Int64, bytes: Int) {
        loop.assertOnLoop()
        guard !settings.automaticFlowControlCredit, bytes > 0, isOpen, let conn else { return }
        _ = ngtcp2_conn_extend_max_stream_offset(conn, stream, UInt64(bytes))
        ngtcp2_conn_extend_max_offset(conn, UInt64(bytes))
        loop.markDirty(self)
    }

    /// Abruptly ends our sending side of `stream` with RESET_STREAM(`code`); queued data is dropped.
    public func resetStream(_ stream: Int64, code: UInt64) {
        loop.assertOnLoop()
        guard isOpen, let conn, let s = streams[stream] else { return }
        s.dropSendBuffer()
        sendable.remove(stream)
        _ = ngtcp2_conn_shutdown_stream_write(conn, 0, stream, code)
        loop.markDirty(self)
    }

    /// Asks the peer to stop sending on `stream` (STOP_SENDING(`code`)); further data is discarded.
    /// A bidirectional stream we have not finished is abandoned both ways (our side is reset with the
    /// same code, as a refused request expects); one whose FIN is queued keeps sending what it queued
    /// (a half-close: the request said all it had to).
    public func stopSending(_ stream: Int64, code: UInt64) {
        loop.assertOnLoop()
        guard isOpen, let conn, let s = streams[stream] else { return }
        _ = ngtcp2_conn_shutdown_stream_read(conn, 0, stream, code)
        if isBidirectional(stream), !s.finQueued, !s.sendClosed {
            // Here, outside any packet being written: nothing of ngtcp2's points into what is dropped.
            s.dropSendBuffer()
            sendable.remove(stream)
            _ = ngtcp2_conn_shutdown_stream_write(conn, 0, stream, code)
        }
        loop.markDirty(self)
    }

    /// Sets the send order of `stream`: higher is sent first; default 0; equal orders are served FIFO.
    public func setSendOrder(_ stream: Int64, _ order: Int64) {
        loop.assertOnLoop()
        streams[stream]?.order = order
    }

    /// Bytes written to `stream` and not yet acknowledged.
    public func queuedBytes(_ stream: Int64) -> Int {
        loop.assertOnLoop()
        return streams[stream]?.unacknowledged ?? 0
    }

    /// Bytes written to `stream` and not yet transmitted (backed up behind congestion or flow control).
    public func unsentBytes(_ stream: Int64) -> Int {
        loop.assertOnLoop()
        return streams[stream]?.unsent ?? 0
    }

    /// Datagrams queued while the congestion window is full, at most (the oldest are dropped).
    static let maxQueuedDatagrams = 1024

    /// Bytes written to all streams and not yet transmitted (O(1): a running total).
    public var totalUnsentBytes: Int {
        loop.assertOnLoop()
        return unsent.bytes
    }

    /// Asks for one ``QUICConnectionDelegate/quicConnection(_:unsentBytesBelow:)`` call as soon as fewer
    /// than `threshold` bytes written to streams remain unsent (at once if that is already so).
    public func notifyWhenUnsent(below threshold: Int) {
        loop.assertOnLoop()
        // The most easily met threshold asked for: whoever asked re-checks its own condition.
        drainThreshold = max(drainThreshold ?? 0, threshold)
        loop.markDirty(self)
    }

    /// Bytes written to all streams and not yet acknowledged.
    public var totalQueuedBytes: Int {
        loop.assertOnLoop()
        return streams.values.reduce(0) { $0 + $1.unacknowledged }
    }

    /// Queues an unreliable DATAGRAM. Returns false when datagrams were not negotiated, `data` is larger than
    /// ``maxDatagramPayload``, or the connection is not established.
    public func sendDatagram(_ data: Bytes) -> Bool {
        loop.assertOnLoop()
        guard phase == .established, data.count <= maxDatagramPayload, maxDatagramPayload > 0 else { return false }
        if datagrams.count - datagramHead >= Self.maxQueuedDatagrams {
            // Unreliable anyway: under congestion the oldest queued datagram is the one to lose.
            datagrams[datagramHead] = Bytes()
            datagramHead += 1
            counters.datagramsDropped += 1
        }
        datagrams.append(data)
        loop.markDirty(self)
        return true
    }

    /// The largest datagram payload that fits the peer's limit and one packet; 0 when the peer did not
    /// negotiate datagrams (or before the handshake completes).
    public var maxDatagramPayload: Int {
        loop.assertOnLoop()
        guard let conn, phase == .established, let params = ngtcp2_conn_get_remote_transport_params(conn) else {
            return 0
        }
        let peerMax = params.pointee.max_datagram_frame_size
        if peerMax == 0 { return 0 }
        // DATAGRAM frame: type (1) + length varint (≤ 8). Short header: 1 + DCID (≤ 20) + packet number (≤ 4) + AEAD tag (16).
        let frameLimit = Int(min(peerMax, 65_535)) - 9
        let packetLimit = Int(ngtcp2_conn_get_path_max_tx_udp_payload_size(conn)) - 1 - 20 - 4 - 16 - 9
        return max(0, min(frameLimit, packetLimit))
    }

    /// Closes the connection with an application CONNECTION_CLOSE(`code`, `reason`). The delegate then gets
    /// `didCloseWith(.application(code:reason:byPeer: false))`. Idempotent.
    public func close(code: UInt64, reason: String) {
        loop.assertOnLoop()
        guard isOpen, pendingClose == nil else { return }
        pendingClose = .application(code: code, reason: reason)
        loop.markDirty(self)
    }

    /// Transport statistics: RTTs, congestion window and bytes in flight from ngtcp2, plus counters kept here.
    public var stats: QUICStats {
        loop.assertOnLoop()
        var s = counters
        s.packetsLost = lostOnClosedStreams
        guard let conn, phase != .closed else { return s }
        var info = ngtcp2_conn_info()
        moq_ngtcp2_conn_get_conn_info(conn, &info)
        s.smoothedRTT = .nanoseconds(Int64(clamping: info.smoothed_rtt))
        s.minRTT = .nanoseconds(Int64(clamping: info.min_rtt == UInt64.max ? 0 : info.min_rtt))
        s.latestRTT = .nanoseconds(Int64(clamping: info.latest_rtt))
        s.rttVariance = .nanoseconds(Int64(clamping: info.rttvar))
        s.congestionWindow = info.cwnd
        s.bytesInFlight = info.bytes_in_flight
        let now = Sys.now()
        s.estimatedSendRate = sendRate.rate(now: now)
        s.estimatedReceiveRate = receiveRate.rate(now: now)
        for id in streams.keys { s.packetsLost += UInt64(ngtcp2_conn_get_stream_loss_count(conn, id)) }
        return s
    }

    // MARK: - Receive path

    /// One UDP datagram from `from` for this connection.
    func receive(_ packet: UnsafeRawBufferPointer, from: SocketAddress) {
        counters.packetsReceived += 1
        counters.bytesReceived += UInt64(packet.count)
        receivedBytesCounter.add(UInt64(packet.count), ordering: .relaxed)
        if settings.testLoss.rx > 0 && nextRandom() < settings.testLoss.rx {
            counters.packetsDroppedByTestLoss += 1
            return
        }
        switch phase {
        case .closing:
            // Answer with the stored CONNECTION_CLOSE (RFC 9000 §10.2.1), at most once per packet received.
            if !closePacket.isEmpty {
                closePacket.withUnsafeBytes { transmit($0, to: nil) }
            }
            return
        case .draining, .closed, .starting:
            return
        case .handshaking, .established:
            break
        }
        guard let conn else { return }
        let now = Sys.now()
        receiveRate.record(bytes: packet.count, now: now)
        let rc = withPath(from: from) { path in
            moq_ngtcp2_conn_read_pkt(
                conn, path, packet.baseAddress?.assumingMemoryBound(to: UInt8.self), packet.count, now)
        }
        if rc != 0 {
            handleError(rc)
            return
        }
        loop.markDirty(self)
    }

    /// The socket reported an error (connected client sockets: ICMP unreachable and the like).
    func socketError(_ code: Int32) {
        guard phase != .closed else { return }
        if phase == .closing || phase == .draining {
            terminate(nil)
            return
        }
        terminate(.unreachable("\(remote): \(Sys.errnoText(code))"))
    }

    // MARK: - Timers

    /// When `handleExpiry` must run next (monotonic ns).
    var expiry: UInt64 {
        switch phase {
        case .closing, .draining: return closeDeadline
        case .handshaking, .established:
            // Parked on EAGAIN: nothing can be sent until the socket is writable, which marks us dirty.
            // (Without this an expired ACK/pacing timer would spin the loop while the socket is full.)
            if !pendingPackets.isEmpty || socket?.isWriteBlocked == true { return .max }
            return conn.map { ngtcp2_conn_get_expiry($0) } ?? .max
        case .starting, .closed: return .max
        }
    }

    func handleExpiry(_ now: UInt64) {
        switch phase {
        case .closing, .draining:
            terminate(nil)
        case .handshaking, .established:
            guard let conn else { return }
            let rc = ngtcp2_conn_handle_expiry(conn, now)
            if rc != 0 {
                handleError(rc)
                return
            }
            loop.markDirty(self)
        case .starting, .closed:
            break
        }
    }

}

/// A connection ID as a hashable value (≤ 20 bytes), for the server's routing table.
struct CIDKey: Hashable {
    private var a: UInt64 = 0, b: UInt64 = 0, c: UInt32 = 0, length: UInt8 = 0

    init(_ cid: ngtcp2_cid) {
        var copy = cid
        let count = min(cid.datalen, 20)
        self = withUnsafeBytes(of: &copy.data) { CIDKey(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        let count = min(bytes.count, 20)
        var buf = (UInt64(0), UInt64(0), UInt32(0))
        if count > 0 {
            withUnsafeMutableBytes(of: &buf) { dst in
                dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
            }
        }
        a = buf.0
        b = buf.1
        c = buf.2
        length = UInt8(count)
    }
}

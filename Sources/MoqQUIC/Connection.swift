// SPDX-License-Identifier: MIT
// One QUIC connection over ngtcp2: receive path, write loop with send-order scheduling, stream and
// connection credit, datagrams, closing/draining periods. Loop thread only.
internal import CNgtcp2
internal import Glibc
public import MoqWire

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
    public private(set) var negotiatedALPN: String?
    /// Lowercase hex SHA-256 of the peer's leaf certificate DER (clients; nil before the handshake completes).
    public private(set) var peerCertificateFingerprint: String?

    enum Phase { case starting, handshaking, established, closing, draining, closed }
    private(set) var phase: Phase = .starting

    let settings: QUICSettings
    var socket: UDPSocket?
    /// The peer's address of the current path.
    let remote = SocketAddress()
    weak var server: QUICServer?
    var conn: OpaquePointer?
    var tls: TLSSession?
    /// Client TLS configuration, read by the certificate verification callback.
    var tlsClient: (config: TLSClientConfiguration, host: String)?
    /// Why certificate verification failed (set during the handshake).
    var tlsFailure: String?
    let connRef: UnsafeMutablePointer<ngtcp2_crypto_conn_ref>
    private let pathStorage: UnsafeMutablePointer<ngtcp2_path_storage>
    private let txBuffer: UnsafeMutableRawBufferPointer
    var isDirty = false
    /// Server CIDs routed to this connection (server side).
    var cidKeys: Set<CIDKey> = []
    /// The client's address without its port (server side): handshakes are counted per source.
    var sourceKey: [UInt8] = []
    /// True until the handshake completes (or the connection ends).
    var isHandshaking: Bool { phase == .starting || phase == .handshaking }

    private var streams: [Int64: StreamState] = [:]
    /// Bytes written to streams and not yet handed to ngtcp2 (all streams).
    private let unsent = UnsentTotal()
    /// Set by ``notifyWhenUnsent(below:)``: the delegate hears once unsent bytes fall below it.
    private var drainThreshold: Int?
    private var sendable: Set<Int64> = []
    private var resetCreditReturned: Set<Int64> = []
    private var streamSequence: UInt64 = 0
    private var datagrams: [Bytes] = []
    private var datagramHead = 0
    /// Datagrams (or segmented batches) that met a full socket, sent first when it drains.
    private var pendingPackets: [(bytes: [UInt8], segment: Int, to: SocketAddress?)] = []
    /// Packets written by ngtcp2 and not yet sent: one segmentation-offload batch at the start of
    /// `txBuffer`, `batchCount` datagrams of `batchSegment` bytes (the last may be shorter).
    private var batchBytes = 0
    private var batchSegment = 0
    private var batchCount = 0
    private var pendingClose: (code: UInt64, reason: String)?
    /// A TLS-level failure detected inside a callback, carried out by flush(): (alert, reason).
    private var pendingFailure: (alert: UInt8, reason: QUICCloseReason)?
    private var closePacket: [UInt8] = []
    private var closeDeadline: UInt64 = .max
    private var closeReason: QUICCloseReason?
    private var reported = false
    private var counters = QUICStats()
    private var lostOnClosedStreams: UInt64 = 0
    private var rng: UInt64
    /// Send-rate measurement: bytes sent since `rateWindowStart`; the rate of the last window of ≥ 100 ms.
    private var rateWindowStart: UInt64 = 0
    private var rateWindowBytes: UInt64 = 0
    private var lastSendRate: UInt64 = 0

    init(loop: QUICEventLoop, isClient: Bool, settings: QUICSettings, delegate: (any QUICConnectionDelegate)?) {
        self.loop = loop
        self.isClient = isClient
        self.settings = settings
        self.delegate = delegate
        connRef = .allocate(capacity: 1)
        pathStorage = .allocate(capacity: 1)
        ngtcp2_path_storage_zero(pathStorage)
        txBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
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
    public func stopSending(_ stream: Int64, code: UInt64) {
        loop.assertOnLoop()
        guard isOpen, let conn, streams[stream] != nil else { return }
        _ = ngtcp2_conn_shutdown_stream_read(conn, 0, stream, code)
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
        pendingClose = (code, reason)
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
        s.estimatedSendRate = Sys.now() &- rateWindowStart > 1_000_000_000 ? 0 : lastSendRate
        for id in streams.keys { s.packetsLost += UInt64(ngtcp2_conn_get_stream_loss_count(conn, id)) }
        return s
    }

    // MARK: - Setup (called by QUICClient / QUICServer)

    var isOpen: Bool { phase == .handshaking || phase == .established }

    func makeCallbacks() -> ngtcp2_callbacks {
        var cb = ngtcp2_callbacks()
        if isClient {
            cb.client_initial = ngtcp2_crypto_client_initial_cb
            cb.recv_retry = ngtcp2_crypto_recv_retry_cb
        } else {
            cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb
        }
        cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb
        cb.encrypt = ngtcp2_crypto_encrypt_cb
        cb.decrypt = ngtcp2_crypto_decrypt_cb
        cb.hp_mask = ngtcp2_crypto_hp_mask_cb
        cb.update_key = ngtcp2_crypto_update_key_cb
        cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb
        cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb
        cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb
        cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb
        cb.rand = { dest, len, _ in
            if let dest { Sys.random(UnsafeMutableRawBufferPointer(start: dest, count: len)) }
        }
        cb.get_new_connection_id = { _, cid, token, len, ud in
            guard let cid, let token else { return NGTCP2_ERR_CALLBACK_FAILURE }
            cid.pointee.datalen = len
            withUnsafeMutableBytes(of: &cid.pointee.data) {
                Sys.random(UnsafeMutableRawBufferPointer(rebasing: $0[0..<len]))
            }
            Sys.random(UnsafeMutableRawBufferPointer(start: token, count: Int(NGTCP2_STATELESS_RESET_TOKENLEN)))
            QUICConnection.from(ud).server?.associate(CIDKey(cid.pointee), with: QUICConnection.from(ud))
            return 0
        }
        cb.remove_connection_id = { _, cid, ud in
            if let cid { QUICConnection.from(ud).server?.dissociate(CIDKey(cid.pointee)) }
            return 0
        }
        cb.handshake_completed = { _, ud in
            QUICConnection.from(ud).onHandshakeCompleted()
        }
        cb.stream_open = { _, id, ud in
            QUICConnection.from(ud).onStreamOpen(id)
            return 0
        }
        cb.recv_stream_data = { _, flags, id, _, data, len, ud, _ in
            QUICConnection.from(ud).onStreamData(
                id, UnsafeRawBufferPointer(start: data, count: len),
                fin: flags & UInt32(NGTCP2_STREAM_DATA_FLAG_FIN) != 0)
            return 0
        }
        cb.acked_stream_data_offset = { _, id, offset, len, ud, _ in
            QUICConnection.from(ud).streams[id]?.acknowledge(upTo: offset + len)
            return 0
        }
        cb.stream_close = { _, _, id, _, ud, _ in
            QUICConnection.from(ud).onStreamClose(id)
            return 0
        }
        cb.stream_reset = { _, id, _, code, ud, _ in
            QUICConnection.from(ud).onStreamReset(id, code: code)
            return 0
        }
        cb.stream_stop_sending = { _, id, code, ud, _ in
            QUICConnection.from(ud).onStopSending(id, code: code)
            return 0
        }
        cb.extend_max_local_streams_bidi = { _, _, ud in
            QUICConnection.from(ud).onStreamCredit(bidirectional: true)
            return 0
        }
        cb.extend_max_local_streams_uni = { _, _, ud in
            QUICConnection.from(ud).onStreamCredit(bidirectional: false)
            return 0
        }
        cb.extend_max_stream_data = { _, id, _, ud, _ in
            QUICConnection.from(ud).onStreamDataCredit(id)
            return 0
        }
        cb.recv_datagram = { _, _, data, len, ud in
            QUICConnection.from(ud).onDatagram(UnsafeRawBufferPointer(start: data, count: len))
            return 0
        }
        return cb
    }

    static func from(_ ud: UnsafeMutableRawPointer?) -> QUICConnection {
        Unmanaged<QUICConnection>.fromOpaque(ud!).takeUnretainedValue()
    }

    /// ngtcp2 settings common to both sides.
    func makeSettings() -> ngtcp2_settings {
        var s = ngtcp2_settings()
        moq_ngtcp2_settings_default(&s)
        s.initial_ts = Sys.now()
        s.handshake_timeout = settings.handshakeTimeout.nanoseconds
        // The connection window never grows past maxData (the memory bound the user chose); ngtcp2 may
        // auto-tune a stream's window from maxStreamData up to min(maxData, 16 MiB) when the RTT calls for it.
        s.max_window = settings.maxData
        s.max_stream_window = max(settings.maxStreamData, min(settings.maxData, 16 << 20))
        switch settings.congestionControl {
        case .bbr: s.cc_algo = NGTCP2_CC_ALGO_BBR
        case .cubic: s.cc_algo = NGTCP2_CC_ALGO_CUBIC
        case .reno: s.cc_algo = NGTCP2_CC_ALGO_RENO
        }
        return s
    }

    /// Transport parameters common to both sides.
    func makeTransportParams() -> ngtcp2_transport_params {
        var p = ngtcp2_transport_params()
        moq_ngtcp2_transport_params_default(&p)
        p.initial_max_stream_data_bidi_local = settings.maxStreamData
        p.initial_max_stream_data_bidi_remote = settings.maxStreamData
        p.initial_max_stream_data_uni = settings.maxStreamData
        p.initial_max_data = settings.maxData
        p.initial_max_streams_bidi = settings.maxBidiStreams
        p.initial_max_streams_uni = settings.maxUniStreams
        p.max_idle_timeout = settings.idleTimeout.nanoseconds
        p.max_datagram_frame_size = settings.maxDatagramFrameSize
        p.active_connection_id_limit = 7
        return p
    }

    /// Finishes setup once `conn` and `tls` exist: registers with the loop and starts the handshake.
    func activate() {
        guard let conn, let tls else { return }
        ngtcp2_conn_set_tls_native_handle(conn, UnsafeMutableRawPointer(tls.session))
        ngtcp2_conn_set_keep_alive_timeout(conn, settings.keepAliveInterval.nanoseconds)
        phase = .handshaking
        loop.add(self)
        loop.markDirty(self)
    }

    /// The `ngtcp2_path` inside the heap-allocated path storage (stable address; ngtcp2 fills it on writes).
    private var pathPointer: UnsafeMutablePointer<ngtcp2_path> {
        (UnsafeMutableRawPointer(pathStorage) + MemoryLayout<ngtcp2_path_storage>.offset(of: \.path)!)
            .assumingMemoryBound(to: ngtcp2_path.self)
    }

    /// A path whose local side is the socket's address and remote side `from`; valid for the call only.
    private func withPath<R>(from: SocketAddress, _ body: (UnsafePointer<ngtcp2_path>) -> R) -> R {
        let local = socket!.local
        var path = ngtcp2_path(
            local: ngtcp2_addr(addr: local.sockaddr, addrlen: local.length),
            remote: ngtcp2_addr(addr: from.sockaddr, addrlen: from.length), user_data: nil)
        return body(&path)
    }

    // MARK: - Receive path

    /// One UDP datagram from `from` for this connection.
    func receive(_ packet: UnsafeRawBufferPointer, from: SocketAddress) {
        counters.packetsReceived += 1
        counters.bytesReceived += UInt64(packet.count)
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
        let rc = withPath(from: from) { path in
            moq_ngtcp2_conn_read_pkt(
                conn, path, packet.baseAddress?.assumingMemoryBound(to: UInt8.self), packet.count, Sys.now())
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

    // MARK: - Write path

    /// Writes whatever ngtcp2 allows now: pending close, stream data by send order, datagrams.
    func flush() {
        guard isOpen, let conn else { return }
        if let failure = pendingFailure {
            pendingFailure = nil
            var ccerr = ngtcp2_ccerr()
            ngtcp2_ccerr_set_tls_alert(&ccerr, failure.alert, nil, 0)
            startClosing(ccerr, reason: failure.reason)
            return
        }
        if let close = pendingClose {
            pendingClose = nil
            var ccerr = ngtcp2_ccerr()
            ngtcp2_ccerr_default(&ccerr)
            let reasonBytes = Array(close.reason.utf8.prefix(1024))
            reasonBytes.withUnsafeBufferPointer { r in
                ngtcp2_ccerr_set_application_error(&ccerr, close.code, r.baseAddress, r.count)
                startClosing(ccerr, reason: .application(code: close.code, reason: close.reason, byPeer: false))
            }
            return
        }
        guard let socket else { return }
        if socket.isWriteBlocked {
            socket.waitForWritable(self)
            return
        }
        while let pending = pendingPackets.first {
            let outcome = pending.bytes.withUnsafeBytes { sendRaw($0, to: pending.to, segment: pending.segment) }
            switch outcome {
            case .wouldBlock:
                socket.waitForWritable(self)
                return
            case .failed(let e):
                terminate(.unreachable("sendto \(remote): \(Sys.errnoText(e))"))
                return
            case .sent:
                pendingPackets.removeFirst()
            }
        }
        writePackets(conn, socket)
        if let threshold = drainThreshold, unsent.bytes < threshold, isOpen {
            drainThreshold = nil
            delegate?.quicConnection(self, unsentBytesBelow: threshold)
        }
    }

    private func writePackets(_ conn: OpaquePointer, _ socket: UDPSocket) {
        let ts = Sys.now()
        let maxPacket = Int(ngtcp2_conn_get_path_max_tx_udp_payload_size(conn))
        let budget = max(Int(ngtcp2_conn_get_send_quantum(conn)), maxPacket)
        var written = 0
        let base = txBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        // Each packet is written after the batch in progress (see `emit`).
        var dest: UnsafeMutablePointer<UInt8> { base + batchBytes }
        let destLength = maxPacket
        let batchLimit = min(txBuffer.count, UDPSocket.maxSegmentedBytes)
        let path = pathPointer
        defer { if isOpen { flushBatch() } }

        // Streams with something to send, highest order first, FIFO among equals.
        var candidates: [StreamState] = sendable.compactMap { streams[$0] }.filter { $0.wantsToSend }
        candidates.sort { $0.order != $1.order ? $0.order > $1.order : $0.sequence < $1.sequence }
        var ci = 0
        let vecs = UnsafeMutableBufferPointer<ngtcp2_vec>.allocate(capacity: 16)
        defer { vecs.deallocate() }
        var datagramTried = false

        while written < budget {
            if batchLimit - batchBytes < maxPacket && !flushBatch() { return }
            // Datagrams first: they carry the most latency-sensitive data and cannot be retransmitted.
            if datagramHead < datagrams.count && !datagramTried {
                let dg = datagrams[datagramHead]
                var accepted: Int32 = 0
                let n = dg.withUnsafeBytes { raw -> Int in
                    var v = ngtcp2_vec(
                        base: UnsafeMutablePointer(mutating: raw.baseAddress?.assumingMemoryBound(to: UInt8.self)),
                        len: raw.count)
                    return Int(
                        moq_ngtcp2_conn_writev_datagram(
                            conn, path, dest, destLength, &accepted, UInt32(NGTCP2_WRITE_DATAGRAM_FLAG_MORE), 0, &v, 1,
                            ts))
                }
                if accepted != 0 || n == Int(NGTCP2_ERR_INVALID_ARGUMENT) || n == Int(NGTCP2_ERR_INVALID_STATE) {
                    datagrams[datagramHead] = Bytes()
                    datagramHead += 1
                    if datagramHead == datagrams.count {
                        datagrams.removeAll(keepingCapacity: true)
                        datagramHead = 0
                    }
                } else {
                    datagramTried = true  // does not fit this packet: let streams fill it, retry in the next one
                }
                if n == Int(NGTCP2_ERR_WRITE_MORE) || n == Int(NGTCP2_ERR_INVALID_ARGUMENT)
                    || n == Int(NGTCP2_ERR_INVALID_STATE)
                {
                    continue
                }
                if n < 0 {
                    failWrite(Int32(n))
                    return
                }
                if n == 0 { break }
                datagramTried = false
                if !emit(n, path: path) { return }
                written += n
                continue
            }

            while ci < candidates.count && !candidates[ci].wantsToSend { ci += 1 }
            let stream = ci < candidates.count ? candidates[ci] : nil
            var count = 0
            var fin = false
            var total = 0
            if let stream {
                let g = stream.gather(into: vecs)
                count = g.count
                total = g.bytes
                fin = stream.finQueued && g.reachesEnd && !stream.finSent
            }
            var flags = UInt32(NGTCP2_WRITE_STREAM_FLAG_MORE)
            if fin { flags |= UInt32(NGTCP2_WRITE_STREAM_FLAG_FIN) }
            var ndatalen: ngtcp2_ssize = -1
            let n = Int(
                moq_ngtcp2_conn_writev_stream(
                    conn, path, dest, destLength, &ndatalen, flags, stream?.id ?? -1,
                    count > 0 ? UnsafePointer(vecs.baseAddress) : nil, count, ts))
            if let stream, ndatalen >= 0 {
                stream.didSend(Int(ndatalen), fin: fin && Int(ndatalen) == total)
                if !stream.wantsToSend { sendable.remove(stream.id) }
            }
            if n < 0 {
                switch Int32(n) {
                case NGTCP2_ERR_WRITE_MORE:
                    // Packet has room: if this stream still has data it is flow-limited for now; move on.
                    if let stream, stream.wantsToSend { ci += 1 }
                    continue
                case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                    stream?.blocked = true
                    ci += 1
                    continue
                case NGTCP2_ERR_STREAM_SHUT_WR, NGTCP2_ERR_STREAM_NOT_FOUND:
                    if let stream {
                        stream.dropSendBuffer()
                        sendable.remove(stream.id)
                    }
                    ci += 1
                    continue
                default:
                    failWrite(Int32(n))
                    return
                }
            }
            if n == 0 { break }
            if !emit(n, path: path) { return }
            written += n
            // A stream that was handed data but still has more keeps its place (highest order first).
        }
        ngtcp2_conn_update_pkt_tx_time(conn, ts)
    }

    /// Adds the `n`-byte packet ngtcp2 just wrote after the batch in progress, and sends the batch
    /// when it is complete: a shorter packet ends it (all but the last segment have one size), as
    /// do the kernel's segment limit and a longer packet (which starts the next batch). Returns
    /// false if the connection must stop writing.
    private func emit(_ n: Int, path: UnsafeMutablePointer<ngtcp2_path>) -> Bool {
        counters.packetsSent += 1
        counters.bytesSent += UInt64(n)
        measureSendRate(n)
        if !isClient && pathChanged(path) {
            // Migration or NAT rebinding: what is batched goes to the old address, then follow the path.
            if !flushBatch(keeping: n) { return false }
            followPath(path)
        }
        if settings.testLoss.tx > 0 && nextRandom() < settings.testLoss.tx {
            counters.packetsDroppedByTestLoss += 1
            return true
        }
        if batchCount > 0 && n > batchSegment {
            if !flushBatch(keeping: n) { return false }
        }
        if batchCount == 0 { batchSegment = n }
        batchBytes += n
        batchCount += 1
        if n < batchSegment || batchCount == UDPSocket.maxSegments || !socketBatches { return flushBatch() }
        return true
    }

    /// Whether the socket takes segmented batches (else each packet is sent as it is written).
    private var socketBatches: Bool { socket?.segmentationOffload ?? false }

    /// Sends the batch. With `keeping` > 0, the packet of that size written after the batch then
    /// moves to the start of the buffer (it begins the next batch). Returns false if the
    /// connection must stop writing (socket full: what was not sent waits in `pendingPackets`).
    @discardableResult
    private func flushBatch(keeping next: Int = 0) -> Bool {
        guard batchCount > 0 else { return true }
        let bytes = UnsafeRawBufferPointer(rebasing: txBuffer[0..<batchBytes])
        let segment = batchCount > 1 ? batchSegment : 0
        let to: SocketAddress? = isClient ? nil : remote
        let nextStart = batchBytes
        batchBytes = 0
        batchCount = 0
        counters.sendCalls += 1
        switch sendRaw(bytes, to: to, segment: segment) {
        case .sent:
            if next > 0 { memmove(txBuffer.baseAddress!, txBuffer.baseAddress! + nextStart, next) }
            return true
        case .wouldBlock:
            pendingPackets.append((Array(bytes), segment, to))
            if next > 0 {
                let packet = UnsafeRawBufferPointer(rebasing: txBuffer[nextStart..<nextStart + next])
                pendingPackets.append((Array(packet), 0, to))
            }
            if let conn { ngtcp2_conn_update_pkt_tx_time(conn, Sys.now()) }
            socket?.waitForWritable(self)
            return false
        case .failed(let e):
            terminate(.unreachable("sendto \(remote): \(Sys.errnoText(e))"))
            return false
        }
    }

    /// A write error: what is batched is dropped (the connection is ending) before the close is written.
    private func failWrite(_ rc: Int32) {
        batchBytes = 0
        batchCount = 0
        handleError(rc)
    }

    private func pathChanged(_ path: UnsafeMutablePointer<ngtcp2_path>) -> Bool {
        let r = path.pointee.remote
        guard let addr = r.addr, r.addrlen > 0 else { return false }
        return !remote.equals(UnsafeRawPointer(addr).assumingMemoryBound(to: sockaddr_storage.self), r.addrlen)
    }

    private func measureSendRate(_ n: Int) {
        let now = Sys.now()
        if rateWindowStart == 0 || now &- rateWindowStart > 1_000_000_000 {
            if rateWindowStart != 0 { lastSendRate = 0 }
            rateWindowStart = now
            rateWindowBytes = 0
        }
        rateWindowBytes += UInt64(n)
        let elapsed = now &- rateWindowStart
        if elapsed >= 100_000_000 {
            lastSendRate = UInt64(Double(rateWindowBytes) * 8e9 / Double(elapsed))
            rateWindowStart = now
            rateWindowBytes = 0
        }
    }

    /// Makes `remote` the peer address of `path` when ngtcp2 moved to another path.
    private func followPath(_ path: UnsafeMutablePointer<ngtcp2_path>) {
        let r = path.pointee.remote
        if pathChanged(path), let addr = r.addr {
            // Migration or NAT rebinding.
            memcpy(remote.storage, addr, Int(r.addrlen))
            remote.length = r.addrlen
        }
    }

    /// Server sockets are shared: packets carry the destination. Client sockets are connected.
    private func sendRaw(_ packet: UnsafeRawBufferPointer, to: SocketAddress?, segment: Int = 0) -> SendOutcome {
        guard let socket else { return .failed(EBADF) }
        if let to {
            return socket.send(packet, to: UnsafePointer(to.sockaddr), length: to.length, segment: segment)
        }
        return socket.send(packet, to: nil, length: 0, segment: segment)
    }

    /// Best-effort send used for CONNECTION_CLOSE packets.
    private func transmit(_ packet: UnsafeRawBufferPointer, to: SocketAddress?) {
        counters.packetsSent += 1
        counters.bytesSent += UInt64(packet.count)
        _ = sendRaw(packet, to: isClient ? nil : remote)
    }

    // MARK: - Closing

    /// Maps an ngtcp2 error from read/expiry/write to the right way of ending the connection.
    func handleError(_ rc: Int32) {
        guard let conn else { return }
        switch rc {
        case NGTCP2_ERR_DRAINING:
            enterDraining(peerCloseReason(conn))
        case NGTCP2_ERR_CLOSING:
            break
        case NGTCP2_ERR_IDLE_CLOSE:
            terminate(.idleTimeout)
        case NGTCP2_ERR_HANDSHAKE_TIMEOUT:
            terminate(.handshakeTimeout)
        case NGTCP2_ERR_DROP_CONN:
            terminate(.transport(code: 0, reason: "connection dropped: \(Sys.ngtcp2Text(rc))", byPeer: false))
        case NGTCP2_ERR_CRYPTO:
            let alert = ngtcp2_conn_get_tls_alert(conn)
            var ccerr = ngtcp2_ccerr()
            ngtcp2_ccerr_set_tls_alert(&ccerr, alert, nil, 0)
            let reason: QUICCloseReason
            if let failure = tlsFailure {
                reason = .tls(failure)
            } else if alert == 120 {
                reason = .alpn(
                    "the peer offered none of our application protocols \(settings.alpn) (sent TLS alert no_application_protocol)"
                )
            } else {
                reason = .tls("TLS handshake failed; sent alert \(Sys.alertName(alert))")
            }
            startClosing(ccerr, reason: reason)
        default:
            var ccerr = ngtcp2_ccerr()
            ngtcp2_ccerr_set_liberr(&ccerr, rc, nil, 0)
            startClosing(ccerr, reason: .transport(code: ccerr.error_code, reason: Sys.ngtcp2Text(rc), byPeer: false))
        }
    }

    private func peerCloseReason(_ conn: OpaquePointer) -> QUICCloseReason {
        let cc = ngtcp2_conn_get_ccerr(conn)!.pointee
        let text =
            cc.reason.map { String(decoding: UnsafeBufferPointer(start: $0, count: cc.reasonlen), as: UTF8.self) } ?? ""
        switch cc.type {
        case NGTCP2_CCERR_TYPE_APPLICATION:
            return .application(code: cc.error_code, reason: text, byPeer: true)
        case NGTCP2_CCERR_TYPE_TRANSPORT where cc.error_code >= 0x100 && cc.error_code < 0x200:
            let alert = UInt8(cc.error_code - 0x100)
            if alert == 120 {
                return .alpn(
                    "client and server have no application protocol in common; we offered \(settings.alpn) "
                        + "(peer sent TLS alert no_application_protocol)")
            }
            var hint = ""
            if [42, 43, 44, 45, 46, 48].contains(alert) {
                hint = isClient ? "" : " (the client rejected our certificate: give it our fingerprint or CA)"
            }
            return .tls(
                "peer aborted the TLS handshake with alert \(Sys.alertName(alert))\(text.isEmpty ? "" : ": \(text)")\(hint)"
            )
        default:
            return .transport(code: cc.error_code, reason: text, byPeer: true)
        }
    }

    /// Writes CONNECTION_CLOSE, reports `reason`, and keeps answering with it for 3 PTO.
    private func startClosing(_ ccerr: ngtcp2_ccerr, reason: QUICCloseReason) {
        guard let conn, isOpen else { return }
        var cc = ccerr
        let dest = txBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let path = pathPointer
        let n = moq_ngtcp2_conn_write_connection_close(conn, path, dest, min(txBuffer.count, 1452), &cc, Sys.now())
        if n <= 0 {
            terminate(reason)
            return
        }
        closePacket = Array(UnsafeRawBufferPointer(rebasing: txBuffer[0..<Int(n)]))
        if !isClient { followPath(path) }
        closePacket.withUnsafeBytes { transmit($0, to: nil) }
        phase = .closing
        closeDeadline = Sys.now() &+ 3 &* ngtcp2_conn_get_pto(conn)
        report(reason)
    }

    private func enterDraining(_ reason: QUICCloseReason) {
        guard let conn, isOpen else { return }
        phase = .draining
        closeDeadline = Sys.now() &+ 3 &* ngtcp2_conn_get_pto(conn)
        report(reason)
    }

    /// Delivers `didCloseWith` once and drops per-stream state (ngtcp2 sends no more stream data).
    private func report(_ reason: QUICCloseReason) {
        guard !reported else { return }
        reported = true
        closeReason = reason
        for s in streams.values { s.dropSendBuffer() }
        sendable.removeAll()
        datagrams.removeAll()
        datagramHead = 0
        let d = delegate
        delegate = nil
        d?.quicConnection(self, didCloseWith: reason)
    }

    /// Frees everything now. `reason` is reported if nothing was reported yet.
    func terminate(_ reason: QUICCloseReason?) {
        guard phase != .closed else { return }
        let wasReported = reported
        phase = .closed
        reported = true
        server?.forget(self)
        loop.remove(self)
        if isClient { socket?.close() }
        socket = nil
        streams.removeAll()
        sendable.removeAll()
        datagrams.removeAll()
        datagramHead = 0
        pendingPackets = []
        batchBytes = 0
        batchCount = 0
        if let conn {
            ngtcp2_conn_del(conn)
            self.conn = nil
        }
        tls = nil
        if !wasReported {
            let r = reason ?? .transport(code: 0, reason: "closed", byPeer: false)
            closeReason = r
            let d = delegate
            delegate = nil
            d?.quicConnection(self, didCloseWith: r)
        }
    }

    /// The loop is shutting down: send a best-effort close, then free everything.
    func abortForShutdown() {
        if isOpen, conn != nil {
            var ccerr = ngtcp2_ccerr()
            ngtcp2_ccerr_default(&ccerr)
            let text = Array("event loop shut down".utf8)
            text.withUnsafeBufferPointer { ngtcp2_ccerr_set_application_error(&ccerr, 0, $0.baseAddress, $0.count) }
            startClosing(ccerr, reason: .application(code: 0, reason: "event loop shut down", byPeer: false))
        }
        terminate(.application(code: 0, reason: "event loop shut down", byPeer: false))
    }

    /// Called when the server refuses a new connection (accept returned nil or the cap is reached).
    func refuse() {
        var ccerr = ngtcp2_ccerr()
        ngtcp2_ccerr_set_transport_error(&ccerr, UInt64(NGTCP2_CONNECTION_REFUSED), nil, 0)
        startClosing(
            ccerr, reason: .transport(code: UInt64(NGTCP2_CONNECTION_REFUSED), reason: "refused", byPeer: false))
    }

    // MARK: - ngtcp2 callbacks (called inside read/expiry/write)

    private func nextSequence() -> UInt64 {
        streamSequence += 1
        return streamSequence
    }

    private func onHandshakeCompleted() -> Int32 {
        phase = .established
        negotiatedALPN = tls?.selectedALPN
        if isClient { peerCertificateFingerprint = tls?.peerFingerprint }
        guard let alpn = negotiatedALPN, settings.alpn.contains(alpn) else {
            // Cannot write from inside a callback: flush() closes right after this packet.
            pendingFailure = (120, .alpn("the peer selected no protocol from \(settings.alpn)"))
            loop.markDirty(self)
            return 0
        }
        delegate?.quicConnectionDidConnect(self)
        return 0
    }

    private func onStreamOpen(_ id: Int64) {
        streams[id] = StreamState(id: id, peerInitiated: true, sequence: nextSequence(), total: unsent)
        delegate?.quicConnection(self, didOpenStream: id)
    }

    private func onStreamData(_ id: Int64, _ data: UnsafeRawBufferPointer, fin: Bool) {
        streams[id]?.delivered = true
        delegate?.quicConnection(self, didReceive: data, on: id, fin: fin)
        // The application has consumed the bytes: return the credit (unless it returns it itself).
        if settings.automaticFlowControlCredit, let conn, !data.isEmpty {
            _ = ngtcp2_conn_extend_max_stream_offset(conn, id, UInt64(data.count))
            ngtcp2_conn_extend_max_offset(conn, UInt64(data.count))
        }
    }

    private func onStreamReset(_ id: Int64, code: UInt64) {
        let state = streams[id]
        delegate?.quicConnection(self, didResetStream: id, code: code)
        // ngtcp2 1.11 bug (fixed upstream in 1.23, commit b2745ac7): a peer-opened *unidirectional* stream that is
        // reset before any data arrived never reaches stream_close, so its MAX_STREAMS credit would be lost for
        // good. Return the credit here, remember it so stream_close (if a fixed ngtcp2 calls it) does not return it
        // twice, and retire the stream on our side. ngtcp2 keeps its own ~250 B record until the connection ends.
        if let conn, let state, state.peerInitiated, !state.delivered, !isBidirectional(id) {
            ngtcp2_conn_extend_max_streams_uni(conn, 1)
            resetCreditReturned.insert(id)
            streams.removeValue(forKey: id)
            sendable.remove(id)
            delegate?.quicConnection(self, didCloseStream: id)
        }
    }

    private func onStopSending(_ id: Int64, code: UInt64) {
        if let s = streams[id] {
            s.dropSendBuffer()
            sendable.remove(id)
        }
        // Answer with RESET_STREAM, as RFC 9000 §3.5 requires.
        if let conn { _ = ngtcp2_conn_shutdown_stream_write(conn, 0, id, code) }
        delegate?.quicConnection(self, didStopSending: id, code: code)
    }

    private func onStreamClose(_ id: Int64) {
        if resetCreditReturned.remove(id) != nil { return }  // already retired by the 1.11 workaround
        guard let state = streams.removeValue(forKey: id) else { return }
        sendable.remove(id)
        if let conn {
            lostOnClosedStreams += UInt64(ngtcp2_conn_get_stream_loss_count(conn, id))
            if state.peerInitiated {
                if isBidirectional(id) {
                    ngtcp2_conn_extend_max_streams_bidi(conn, 1)
                } else {
                    ngtcp2_conn_extend_max_streams_uni(conn, 1)
                }
            }
        }
        delegate?.quicConnection(self, didCloseStream: id)
    }

    private func onStreamCredit(bidirectional: Bool) {
        guard phase == .established else { return }
        delegate?.quicConnection(self, streamCreditAvailable: bidirectional)
    }

    private func onStreamDataCredit(_ id: Int64) {
        guard let s = streams[id], s.blocked else { return }
        s.blocked = false
        if s.wantsToSend {
            sendable.insert(id)
            loop.markDirty(self)
        }
    }

    private func onDatagram(_ data: UnsafeRawBufferPointer) {
        delegate?.quicConnection(self, didReceiveDatagram: data)
    }

    private func isBidirectional(_ id: Int64) -> Bool { id & 0x2 == 0 }

    /// Uniform in [0, 1), splitmix64 (test loss only).
    private func nextRandom() -> Double {
        rng &+= 0x9e37_79b9_7f4a_7c15
        var z = rng
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
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

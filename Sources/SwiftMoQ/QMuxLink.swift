// SPDX-License-Identifier: MIT
import MoqModel
import MoqQMux
import MoqQUIC
import MoqSession
import MoqSync
import MoqWire
import Synchronization

/// moq-lite over qmux over a WebSocket (subprotocol `qmux-01.moq-lite-06`): the session core's
/// transport where UDP does not pass. The WebSocket's binary messages are qmux records; the
/// ``QMuxConnection`` keeps QUIC's stream semantics, credit and budgets; the ``SessionConnection``
/// above is the same as over QUIC. Loop thread only.
///
/// Back-pressure: records are made only while the socket's queue is under ``highWater``; what the
/// session wrote and could not go stays in the qmux streams (counted as unsent, as over QUIC), so a
/// slow reader holds at most that queue plus the session's own budget (`maxUnsentBytes`).
final class QMuxLink: SessionTransport, ByteStreamDelegate {
    let loop: QUICEventLoop
    let qmux: QMuxConnection
    /// TCP, or TLS over TCP (`wss://`).
    let tcp: any ByteStream
    private var reader: WebSocketReader
    /// Set once the WebSocket close frame went out (or came in).
    private var webSocketClosed = false
    private var flushScheduled = false
    private var timer: QUICTimer?
    private var timerDeadline: UInt64 = .max
    private var random = SystemRandomNumberGenerator()
    /// The session endpoint above (it owns the core and hears the close), held until the close
    /// has been delivered, as a QUIC connection holds its delegate: the cycle through the core ends then.
    private var endpoint: SessionConnection?
    /// Bytes on the TCP connection (WebSocket framing included), readable from any thread.
    final class ByteCounts: Sendable {
        let sent = Atomic<UInt64>(0)
        let received = Atomic<UInt64>(0)
    }
    let counts = ByteCounts()
    /// Called once when the connection ended (a server's count of WebSocket sessions).
    var onClosed: (() -> Void)?
    /// Bytes of WebSocket frames queued in the socket past which no more records are made.
    static let highWater = 256 << 10

    init(endpoint: SessionConnection, tcp: any ByteStream, isClient: Bool, settings: QMuxSettings) {
        self.endpoint = endpoint
        self.loop = tcp.loop
        self.tcp = tcp
        qmux = QMuxConnection(isClient: isClient, settings: settings, now: Self.now())
        reader = WebSocketReader(expectMasked: !isClient)
        tcp.delegate = self
    }

    static func now() -> UInt64 { SystemClock().now() }

    /// Starts: our transport parameters go out at once; bytes that came with the upgrade are read.
    func start(leftover: [UInt8]) {
        if !leftover.isEmpty { leftover.withUnsafeBytes { byteStream(tcp, didRead: $0) } }
        flush()
    }

    // MARK: SessionTransport

    var isClient: Bool { qmux.isClient }
    func openStream(bidirectional: Bool) -> Int64? { qmux.openStream(bidirectional: bidirectional) }
    func write(_ stream: Int64, _ data: Bytes, fin: Bool) {
        qmux.write(stream, data, fin: fin)
        flushSoon()
    }
    func finish(_ stream: Int64) {
        qmux.finish(stream)
        flushSoon()
    }
    func consumed(_ stream: Int64, bytes: Int) {
        qmux.consumed(stream, bytes: bytes)
        flushSoon()
    }
    // The core speaks WebTransport-mapped stream codes (as moq-dev does over QUIC); qmux carries them raw.
    func resetStream(_ stream: Int64, code: UInt64) {
        qmux.resetStream(stream, code: StreamErrorCode(wireValue: code)?.rawValue ?? 0)
        flushSoon()
    }
    func stopSending(_ stream: Int64, code: UInt64) {
        qmux.stopSending(stream, code: StreamErrorCode(wireValue: code)?.rawValue ?? 0)
        flushSoon()
    }
    func setSendOrder(_ stream: Int64, _ order: Int64) { qmux.setSendOrder(stream, order) }
    func unsentBytes(_ stream: Int64) -> Int { qmux.unsentBytes(stream) }
    var totalUnsentBytes: Int { qmux.totalUnsentBytes }
    func notifyWhenUnsent(below threshold: Int) {
        qmux.notifyWhenUnsent(below: threshold)
        flushSoon()
    }
    /// moq-lite publishers send no datagrams over qmux (the binding has none).
    func sendDatagram(_ data: Bytes) -> Bool { false }
    var maxDatagramPayload: Int { 0 }
    func close(code: UInt64, reason: String) {
        qmux.close(code: code, reason: reason)
        flushSoon()
    }
    var transportEstimates: TransportEstimates {
        TransportEstimates(smoothedRTTMicros: qmux.smoothedRTT / 1000, sendRateBps: 0)
    }

    /// A raw qmux stream code as the core reads it (0, "stopped reading", stays 0).
    private static func mapped(_ code: UInt64) -> UInt64 {
        code == 0 ? 0 : StreamErrorCode(rawValue: code).wireValue
    }

    // MARK: Driving

    /// Writes and events at the end of this loop turn (writes come in bursts).
    private func flushSoon() {
        guard !flushScheduled else { return }
        flushScheduled = true
        let box = LoopBound(self)
        loop.execute { box.value.flush() }
    }

    /// Hands events up, then records down while the socket takes them; arms the timer.
    func flush() {
        flushScheduled = false
        dispatch()
        let now = Self.now()
        while tcp.queuedBytes < Self.highWater, !tcp.isClosed, let record = qmux.nextRecord(now: now) {
            let frame = WebSocketWriter.binary(record, mask: mask())
            counts.sent.add(UInt64(frame.count), ordering: .relaxed)
            tcp.write(frame)
            dispatch()
        }
        if qmux.isFinished && !webSocketClosed && !tcp.isClosed {
            closeWebSocket(code: 1000, reason: "")
        } else if qmux.wantsToSend {
            tcp.notifyWhenWritable()
        }
        arm()
    }

    /// How long a closed connection's last bytes may take to leave before the socket is shut anyway
    /// (a peer that stopped reading must not hold it).
    static let linger: Duration = .seconds(5)

    /// Sends the WebSocket close frame after what is queued, then shuts the socket once that left,
    /// or after ``linger``.
    private func closeWebSocket(code: UInt16, reason: String) {
        guard !webSocketClosed else { return }
        webSocketClosed = true
        tcp.write(WebSocketWriter.close(code: code, reason: reason, mask: mask()))
        tcp.close()
        guard !tcp.isClosed else { return }
        let me = LoopBound(self)
        _ = loop.schedule(after: Self.linger) { me.value.tcp.close(now: true) }
    }

    private func mask() -> [UInt8]? {
        guard qmux.isClient else { return nil }
        let v = random.next() as UInt32
        return [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
    }

    private func arm() {
        guard let deadline = qmux.nextDeadline else {
            timer?.cancel()
            timer = nil
            return
        }
        guard deadline != timerDeadline || timer == nil else { return }
        timer?.cancel()
        timerDeadline = deadline
        let box = LoopBound(self)
        let now = Self.now()
        timer = loop.schedule(after: .nanoseconds(Int64(min(deadline &- min(deadline, now), 1 << 62)))) {
            let me = box.value
            me.timer = nil
            me.qmux.tick(now: Self.now())
            me.flush()
        }
    }

    private func dispatch() {
        while true {
            let events = qmux.takeEvents()
            if events.isEmpty { return }
            for event in events { handle(event) }
        }
    }

    private func handle(_ event: QMuxEvent) {
        guard let endpoint else { return }
        switch event {
        case .ready: endpoint.makeCore(self).connected()
        case .streamOpened(let id): endpoint.core?.streamOpened(id)
        case .received(let id, let data, let fin):
            data.withUnsafeBytes { endpoint.core?.received(stream: id, data: $0, fin: fin) }
        case .streamReset(let id, let code): endpoint.core?.streamReset(stream: id, wireCode: Self.mapped(code))
        case .stopSending(let id, let code): endpoint.core?.stopSending(stream: id, wireCode: Self.mapped(code))
        case .streamClosed(let id): endpoint.core?.streamClosed(stream: id)
        case .streamCredit(let bidirectional): endpoint.core?.streamCreditAvailable(bidirectional: bidirectional)
        case .unsentBelow: endpoint.core?.sendBufferDrained()
        case .closed(let reason):
            self.endpoint = nil
            endpoint.qmuxClosed(reason)
            let ended = onClosed
            onClosed = nil
            ended?()
        }
    }

    // MARK: ByteStreamDelegate

    func byteStream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        // Closed: what still arrives is dropped (nothing is held for it).
        guard qmux.closeReason == nil else { return }
        counts.received.add(UInt64(bytes.count), ordering: .relaxed)
        reader.append(bytes)
        let now = Self.now()
        do {
            while let message = try reader.next() {
                switch message {
                case .binary(let record): qmux.receive(record: record, now: now)
                case .text, .pong: break
                case .ping(let payload):
                    // Answered while our queue has room: a peer that pings and never reads gets no more.
                    if tcp.queuedBytes < Self.highWater {
                        tcp.write(WebSocketWriter.pong(payload.array, mask: mask()))
                    }
                case .close:
                    // The peer is done: answer its close and end (a qmux close, if any, came first).
                    qmux.carrierLost("the peer closed the WebSocket")
                    closeWebSocket(code: 1000, reason: "")
                }
                dispatch()
                if qmux.closeReason != nil { break }
            }
        } catch {
            qmux.carrierLost("\(error)")
            closeWebSocket(code: error.closeCode, reason: error.reason)
        }
        flush()
    }

    // Not a flush from inside the socket's own write (it calls this): at the end of the turn.
    func byteStreamCanWrite(_ stream: any ByteStream) { flushSoon() }

    func byteStream(_ stream: any ByteStream, didEnd error: String?) {
        qmux.carrierLost(error.map { "the WebSocket failed: \($0)" } ?? "the WebSocket's TCP connection ended")
        dispatch()
        timer?.cancel()
        timer = nil
    }
}

extension SessionConnection {
    /// The qmux connection under the session ended: the same reporting as a QUIC close.
    func qmuxClosed(_ reason: QMuxCloseReason) {
        let sessionReason: SessionCloseReason
        let error: MoqError
        switch reason {
        case .application(let code, let text, let byPeer):
            sessionReason =
                byPeer
                ? .remote(SessionErrorCode(rawValue: code), text) : .local(SessionErrorCode(rawValue: code), text)
            error = byPeer ? .refused(code: code, reason: text) : .closed("closed: \(SessionErrorCode(rawValue: code))")
        case .transport(let code, let text, let byPeer):
            let what = "qmux error 0x\(String(code, radix: 16)) \(byPeer ? "from" : "with") \(peerDescription): \(text)"
            sessionReason = .transport(what)
            error = .unreachable(what)
        case .idleTimeout:
            sessionReason = .transport(
                "the WebSocket connection to \(peerDescription) went idle (nothing for the idle timeout)")
            error = .unreachable("the WebSocket connection to \(peerDescription) timed out")
        case .lost(let why):
            sessionReason = .transport("\(peerDescription): \(why)")
            error = .unreachable("\(peerDescription): \(why)")
        }
        if onReady != nil { fail(error) }
        core?.transportClosed(sessionReason)
        if closeReason == nil { finishClose(sessionReason) }
    }
}

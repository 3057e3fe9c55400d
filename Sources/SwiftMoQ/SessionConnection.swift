// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync
import MoqWebTransport
import MoqWire
import MoqtSession
import MoqtWire

/// Adapts a QUIC connection to the session core's transport protocol.
class QUICSessionTransport: SessionTransport {
    let connection: QUICConnection

    init(_ connection: QUICConnection) { self.connection = connection }

    var isClient: Bool { connection.isClient }
    func openStream(bidirectional: Bool) -> Int64? { connection.openStream(bidirectional: bidirectional) }
    func write(_ stream: Int64, _ data: Bytes, fin: Bool) { connection.write(stream, data, fin: fin) }
    func finish(_ stream: Int64) { connection.finish(stream) }
    func consumed(_ stream: Int64, bytes: Int) { connection.consume(stream, bytes: bytes) }
    func resetStream(_ stream: Int64, code: UInt64) { connection.resetStream(stream, code: code) }
    func stopSending(_ stream: Int64, code: UInt64) { connection.stopSending(stream, code: code) }
    func setSendOrder(_ stream: Int64, _ order: Int64) { connection.setSendOrder(stream, order) }
    func unsentBytes(_ stream: Int64) -> Int { connection.unsentBytes(stream) }
    var totalUnsentBytes: Int { connection.totalUnsentBytes }
    func notifyWhenUnsent(below threshold: Int) { connection.notifyWhenUnsent(below: threshold) }
    func sendDatagram(_ data: Bytes) -> Bool { connection.sendDatagram(data) }
    var maxDatagramPayload: Int { connection.maxDatagramPayload }
    func close(code: UInt64, reason: String) { connection.close(code: code, reason: reason) }

    var transportEstimates: TransportEstimates {
        let stats = connection.stats
        return TransportEstimates(
            smoothedRTTMicros: stats.smoothedRTT.nanoseconds / 1000, sendRateBps: stats.estimatedSendRate)
    }
}

/// One session over one QUIC connection: moq-lite raw (ALPN `moq-lite-06`) or inside a
/// WebTransport session (ALPN `h3`), or, for a client that offered it, MoQ Transport on raw QUIC
/// (`moqt-16`, `moq-00`). Routes QUIC events into the session core and reports setup/close to the
/// waiting API. Loop thread only.
final class SessionConnection: QUICConnectionDelegate, SessionCoreDelegate, MoqtSessionDelegate {
    let loop: QUICEventLoop
    var connection: QUICConnection?
    /// Made when the handshake completes (the ALPN decides the transport), when it is moq-lite.
    private(set) var core: SessionCore?
    /// Made when the handshake completes, when the server chose MoQ Transport.
    private(set) var ietf: IETFClientCore?
    /// The core behind the session's API, either family.
    private(set) var client: (any ClientCore)?
    /// Where the transport's events go (the core of either family).
    private(set) var sink: (any TransportEventSink)?
    /// Client: the MoQ Transport drafts offered (beside moq-lite or instead of it). Server: those it
    /// accepts over WebTransport (raw QUIC's are chosen by ALPN before this connection exists).
    var ietfVersions: [MoqtVersion] = []
    /// Client: whether moq-lite was offered (for the message when the peer agreed on none).
    var offersMoqLite = true
    let config: SessionConfig
    /// Client: the CONNECT to send when the session runs over WebTransport (nil: raw QUIC).
    var webTransportRequest: WebTransportConnect.Request?
    /// Server: decides on a WebTransport CONNECT; returns the HTTP status that refuses it, or
    /// nil to accept it.
    var admitWebTransport: ((WebTransportConnect.Request) -> Int?)?
    /// Server: the accepted CONNECT's path and query (WebTransport clients send no SETUP path).
    var webTransportPath: String?
    /// The HTTP/3 side when the session runs over WebTransport.
    var web: WebTransportRouter?
    /// What ``web`` reaches the connection through (the router holds it unowned).
    var webIO: QUICWebTransportStreams?
    /// The WebSocket carrier when the session runs over qmux (then ``connection`` is nil).
    var qmuxLink: QMuxLink?
    /// A client's TCP connection while its WebSocket upgrade is under way (shut if the connect times out).
    var pendingTCP: (any ByteStream)?
    /// What the session serves to its peer.
    let directory: (any BroadcastDirectory)?
    /// Called once: the session is usable, or failed before it was.
    var onReady: ((Result<Void, MoqError>) -> Void)?
    /// Set when the connect timer fired after the peer had sent something: the path works but
    /// the handshake is slow (a long round trip), so the next attempt deserves more time.
    var peerAnsweredBeforeTimeout: Lock<Bool>?
    /// Called once when the session ends (after `onReady`).
    var onClose: ((SessionCloseReason) -> Void)?
    var onGoaway: ((String) -> Void)?
    var onLimit: ((SessionLimitEvent) -> Void)?
    private(set) var closeReason: SessionCloseReason?
    private var connectTimer: QUICTimer?
    /// Run once when the session ends (an ``IETFSession``'s, over WebTransport).
    private var closeHandlers: [UInt64: () -> Void] = [:]
    private var nextCloseHandler: UInt64 = 0
    /// What the peer is (for messages).
    let peerDescription: String

    init(loop: QUICEventLoop, config: SessionConfig, directory: (any BroadcastDirectory)?, peerDescription: String) {
        self.loop = loop
        self.config = config
        self.directory = directory
        self.peerDescription = peerDescription
    }

    func attach(_ connection: QUICConnection) {
        self.connection = connection
    }

    @discardableResult
    func makeCore(_ transport: any SessionTransport) -> SessionCore {
        let core = SessionCore(
            config: config, transport: transport, scheduler: LoopScheduler(loop: loop), publishOrigin: directory)
        core.delegate = self
        self.core = core
        client = core
        sink = core
        return core
    }

    /// MoQ Transport `version` was chosen: its core takes the connection (raw QUIC), or the
    /// WebTransport session (`transport`; then no PATH setup parameter: the CONNECT carries the path,
    /// which is the session's path on a server). A server's core starts when the CONNECT is answered.
    func startIETF(_ connection: QUICConnection, version: MoqtVersion, transport: (any SessionTransport)? = nil) {
        var moqtConfig = MoqtSessionConfig(version: version, path: transport == nil ? config.path : nil)
            .tightened(to: config.limits)
        if !connection.isClient { moqtConfig.connectPath = webTransportPath }
        let core = MoqtSessionCore(
            config: moqtConfig, transport: transport ?? QUICSessionTransport(connection),
            scheduler: LoopScheduler(loop: loop), publishOrigin: directory)
        core.delegate = self
        let adapter = IETFClientCore(core)
        ietf = adapter
        client = adapter
        sink = core
        if connection.isClient { core.connected() }
    }

    /// The protocol the session speaks: `moq-lite-06`, or the MoQ Transport draft's ALPN.
    var negotiatedVersion: String? {
        if let ietf { return ietf.core.version.alpn }
        return core == nil ? nil : MoqVersion.lite06.rawValue
    }

    /// The peer the connection went to, and the path its session is scoped to.
    var setupPathForRelay: String? { webTransportPath ?? core?.peerSetup?.path }

    func startConnectTimer(_ timeout: Duration) {
        let box = LoopBound(self)
        connectTimer = loop.schedule(after: timeout) {
            let me = box.value
            guard me.onReady != nil else { return }
            if (me.connection?.stats.bytesReceived ?? 0) > 0 { me.peerAnsweredBeforeTimeout?.withLock { $0 = true } }
            me.fail(
                .timeout("no moq session with \(me.peerDescription) within \(timeout) (is a relay listening there?)"))
            me.connection?.close(code: SessionErrorCode.timeout.rawValue, reason: "connect timeout")
            me.qmuxLink?.close(code: SessionErrorCode.timeout.rawValue, reason: "connect timeout")
            me.pendingTCP?.close(now: true)
            me.pendingTCP = nil
        }
    }

    func fail(_ error: MoqError) {
        connectTimer?.cancel()
        let ready = onReady
        onReady = nil
        ready?(.failure(error))
    }

    // MARK: QUICConnectionDelegate

    func quicConnectionDidConnect(_ connection: QUICConnection) {
        switch connection.negotiatedALPN {
        case MoqVersion.lite06.rawValue? where webTransportRequest == nil:
            makeCore(QUICSessionTransport(connection)).connected()
        case WebTransportWire.alpn?:
            startWebTransport(connection)
        case let alpn? where webTransportRequest == nil && ietfVersions.contains(where: { $0.alpn == alpn }):
            startIETF(connection, version: MoqtVersion(alpn: alpn) ?? .draft16)
        default:
            let offered = (offersMoqLite ? [MoqVersion.lite06.rawValue] : []) + ietfVersions.map(\.alpn)
            let wanted = webTransportRequest == nil ? offered.joined(separator: " or ") : WebTransportWire.alpn
            fail(.tls("the peer did not agree on \(wanted) (ALPN \(connection.negotiatedALPN ?? "none"))"))
            connection.close(code: SessionErrorCode.version.rawValue, reason: "unsupported version")
        }
    }

    func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64) {
        // Over WebTransport a peer stream is the session's only once its preamble says so.
        guard web == nil else { return }
        sink?.streamOpened(stream)
    }

    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {
        guard let web, web.route(stream) == .endpoint else {
            sink?.received(stream: stream, data: data, fin: fin)
            return
        }
        let events: [WebTransportEndpoint.Event]
        do { events = try web.received(stream, data, fin: fin) } catch {
            webTransportFailed(error)
            return
        }
        handle(events)
    }

    func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64) {
        guard let web, web.route(stream) == .endpoint else {
            sink?.streamReset(stream: stream, wireCode: code)
            return
        }
        if stream == web.endpoint.sessionID {
            handle([.closed(code: 0, reason: "the peer reset the CONNECT stream")])
        } else {
            web.abandon(stream)
        }
    }

    func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64) {
        // The peer stopped reading one of the HTTP/3 side's streams: nothing of the session's.
        guard let web, web.route(stream) == .endpoint else {
            sink?.stopSending(stream: stream, wireCode: code)
            return
        }
    }

    func quicConnection(_ connection: QUICConnection, didCloseStream stream: Int64) {
        guard let web else {
            sink?.streamClosed(stream: stream)
            return
        }
        if web.route(stream) == .core { sink?.streamClosed(stream: stream) }
        web.closed(stream)
    }

    func quicConnection(_ connection: QUICConnection, didReceiveDatagram data: UnsafeRawBufferPointer) {
        guard let web else {
            sink?.datagramReceived(data)
            return
        }
        // A datagram of another (or no) session is dropped, as RFC 9297 allows.
        if let payload = web.datagramPayload(data) { sink?.datagramReceived(payload) }
    }

    func quicConnection(_ connection: QUICConnection, streamCreditAvailable bidirectional: Bool) {
        sink?.streamCreditAvailable(bidirectional: bidirectional)
    }

    func quicConnection(_ connection: QUICConnection, unsentBytesBelow threshold: Int) {
        sink?.sendBufferDrained()
    }

    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason) {
        let sessionReason: SessionCloseReason
        let error: MoqError
        switch reason {
        case .application(var code, let text, let byPeer):
            // Over WebTransport the QUIC close carries the session code mapped into HTTP/3's range.
            if web != nil, let mapped = StreamErrorCode(wireValue: code) { code = mapped.rawValue }
            sessionReason =
                byPeer
                ? .remote(SessionErrorCode(rawValue: code), text) : .local(SessionErrorCode(rawValue: code), text)
            error = byPeer ? .refused(code: code, reason: text) : .closed("closed: \(SessionErrorCode(rawValue: code))")
        case .tls(let text):
            sessionReason = .transport("TLS handshake with \(peerDescription) failed: \(text)")
            error = .tls("TLS handshake with \(peerDescription) failed: \(text)")
        case .alpn(let text):
            sessionReason = .transport(text)
            error = .tls("\(peerDescription): \(text)")
        case .unreachable(var text):
            if text.hasPrefix(peerDescription + ": ") { text.removeFirst(peerDescription.count + 2) }
            sessionReason = .transport("cannot reach \(peerDescription): \(text)")
            error = .unreachable("cannot reach \(peerDescription): \(text)")
        case .handshakeTimeout:
            sessionReason = .transport("no QUIC handshake with \(peerDescription)")
            error = .unreachable(
                "cannot reach \(peerDescription): no answer to the QUIC handshake (is a relay listening there?)")
        case .idleTimeout:
            sessionReason = .transport(
                "the connection to \(peerDescription) went idle (no packets for the idle timeout)")
            error = .unreachable("the connection to \(peerDescription) timed out")
        case .transport(let code, let text, let byPeer):
            sessionReason = .transport(
                "QUIC error 0x\(String(code, radix: 16)) \(byPeer ? "from" : "with") \(peerDescription): \(text)")
            error = .unreachable("QUIC error with \(peerDescription): \(text) (0x\(String(code, radix: 16)))")
        }
        if onReady != nil { fail(error) }
        if let ietf, case .remote(let code, let text) = sessionReason {
            // The peer's termination code (unmapped over WebTransport).
            ietf.core.peerClosed(code: code.rawValue, reason: text)
        } else {
            sink?.transportClosed(sessionReason)
        }
        if closeReason == nil { finishClose(sessionReason) }
    }

    // MARK: SessionCoreDelegate

    func sessionDidSetup(_ session: SessionCore, peer: Setup) { setupCompleted() }

    /// SETUP crossed (either family): the waiting connect succeeds.
    private func setupCompleted() {
        connectTimer?.cancel()
        let ready = onReady
        onReady = nil
        ready?(.success(()))
    }

    func session(_ session: SessionCore, didReceiveGoaway uri: String) {
        onGoaway?(uri)
    }

    func session(_ session: SessionCore, didHitLimit limit: SessionLimitEvent) {
        onLimit?(limit)
    }

    func session(_ session: SessionCore, didCloseWith reason: SessionCloseReason) {
        coreClosed(reason)
    }

    /// The core of either family closed the session.
    private func coreClosed(_ reason: SessionCloseReason) {
        if onReady != nil {
            switch reason {
            case .remote(let code, let text): fail(.refused(code: code.rawValue, reason: text))
            case .local(let code, let text): fail(.closed("session closed before setup: \(code) \(text)"))
            case .transport(let text): fail(.unreachable(text))
            }
        }
        finishClose(reason)
    }

    // MARK: MoqtSessionDelegate

    func moqtSessionReady(_ session: MoqtSessionCore) { setupCompleted() }

    func moqtSession(_ session: MoqtSessionCore, goaway uri: String) { onGoaway?(uri) }

    func moqtSession(_ session: MoqtSessionCore, closed reason: MoqtCloseReason) {
        let mapped: SessionCloseReason =
            switch reason {
            case .local(let code, let text): .local(SessionErrorCode(rawValue: code.rawValue), text)
            case .remote(let code, let text): .remote(SessionErrorCode(rawValue: code), text)
            case .transport(let text): .transport(text)
            }
        ietf?.sessionClosed()
        coreClosed(mapped)
    }

    func finishClose(_ reason: SessionCloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        connectTimer?.cancel()
        let handler = onClose
        onClose = nil
        handler?(reason)
        let handlers = closeHandlers.sorted { $0.key < $1.key }.map(\.value)
        closeHandlers = [:]
        for handler in handlers { handler() }
    }
}

/// A server's MoQ Transport session over WebTransport is an ``IETFSession`` on this connection.
extension SessionConnection: IETFEndpoint {
    var moqtCore: MoqtSessionCore? { ietf?.core }
    var binding: SessionBinding { web == nil ? .quic : .webTransport }

    func addCloseHandler(_ handler: @escaping () -> Void) -> UInt64 {
        nextCloseHandler += 1
        if closeReason != nil {
            handler()
        } else {
            closeHandlers[nextCloseHandler] = handler
        }
        return nextCloseHandler
    }

    func removeCloseHandler(_ key: UInt64) { closeHandlers[key] = nil }
}

// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync
import MoqWire

/// Adapts a QUIC connection to the session core's transport protocol.
final class QUICSessionTransport: SessionTransport {
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

/// One moq-lite session over one QUIC connection: routes QUIC events into the
/// session core and reports setup/close to the waiting API. Loop thread only.
final class SessionConnection: QUICConnectionDelegate, SessionCoreDelegate {
    let loop: QUICEventLoop
    var connection: QUICConnection?
    var core: SessionCore?
    let config: SessionConfig
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
        let core = SessionCore(
            config: config, transport: QUICSessionTransport(connection), scheduler: LoopScheduler(loop: loop),
            publishOrigin: directory)
        core.delegate = self
        self.core = core
    }

    func startConnectTimer(_ timeout: Duration) {
        let box = LoopBound(self)
        connectTimer = loop.schedule(after: timeout) {
            let me = box.value
            guard me.onReady != nil else { return }
            if (me.connection?.stats.bytesReceived ?? 0) > 0 { me.peerAnsweredBeforeTimeout?.withLock { $0 = true } }
            me.fail(
                .timeout("no moq session with \(me.peerDescription) within \(timeout) (is a relay listening there?)"))
            me.connection?.close(code: SessionErrorCode.timeout.rawValue, reason: "connect timeout")
        }
    }

    private func fail(_ error: MoqError) {
        connectTimer?.cancel()
        let ready = onReady
        onReady = nil
        ready?(.failure(error))
    }

    // MARK: QUICConnectionDelegate

    func quicConnectionDidConnect(_ connection: QUICConnection) {
        guard connection.negotiatedALPN == MoqVersion.lite06.rawValue else {
            fail(
                .tls(
                    "the peer did not agree on \(MoqVersion.lite06.rawValue) (ALPN \(connection.negotiatedALPN ?? "none"))"
                ))
            connection.close(code: SessionErrorCode.version.rawValue, reason: "unsupported version")
            return
        }
        core?.connected()
    }

    func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64) {
        core?.streamOpened(stream)
    }

    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {
        core?.received(stream: stream, data: data, fin: fin)
    }

    func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64) {
        core?.streamReset(stream: stream, wireCode: code)
    }

    func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64) {
        core?.stopSending(stream: stream, wireCode: code)
    }

    func quicConnection(_ connection: QUICConnection, didCloseStream stream: Int64) {
        core?.streamClosed(stream: stream)
    }

    func quicConnection(_ connection: QUICConnection, didReceiveDatagram data: UnsafeRawBufferPointer) {
        core?.datagramReceived(data)
    }

    func quicConnection(_ connection: QUICConnection, streamCreditAvailable bidirectional: Bool) {
        core?.streamCreditAvailable(bidirectional: bidirectional)
    }

    func quicConnection(_ connection: QUICConnection, unsentBytesBelow threshold: Int) {
        core?.sendBufferDrained()
    }

    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason) {
        let sessionReason: SessionCloseReason
        let error: MoqError
        switch reason {
        case .application(let code, let text, let byPeer):
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
        core?.transportClosed(sessionReason)
        if closeReason == nil { finishClose(sessionReason) }
    }

    // MARK: SessionCoreDelegate

    func sessionDidSetup(_ session: SessionCore, peer: Setup) {
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
        if onReady != nil {
            switch reason {
            case .remote(let code, let text): fail(.refused(code: code.rawValue, reason: text))
            case .local(let code, let text): fail(.closed("session closed before setup: \(code) \(text)"))
            case .transport(let text): fail(.unreachable(text))
            }
        }
        finishClose(reason)
    }

    private func finishClose(_ reason: SessionCloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        connectTimer?.cancel()
        let handler = onClose
        onClose = nil
        handler?(reason)
    }
}

// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc
internal import MoqBase

/// Closing: the application's close, the peer's, idle and handshake timeouts, draining, and the report to the delegate.
extension QUICConnection {

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
            if let failure = tls?.verificationFailure {
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
    func startClosing(_ ccerr: ngtcp2_ccerr, reason: QUICCloseReason) {
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

    /// Delivers `didCloseWith` and drops per-stream state (ngtcp2 sends no more stream data).
    /// Called once: on leaving an open phase for closing or draining.
    private func report(_ reason: QUICCloseReason) {
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
        let wasReported = phase.hasReported
        phase = .closed
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
}

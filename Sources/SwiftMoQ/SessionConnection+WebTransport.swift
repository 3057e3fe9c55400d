// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqWebTransport
import MoqWire

/// The WebTransport half of ``SessionConnection``: the HTTP/3 handshake before the session
/// core starts, and the events of the HTTP/3 side afterwards.
extension SessionConnection {
    func startWebTransport(_ connection: QUICConnection) {
        let role: WebTransportEndpoint.Role
        if connection.isClient {
            guard let request = webTransportRequest else { return }
            role = .client(request)
        } else {
            role = .server
        }
        let io = QUICWebTransportStreams(connection)
        let router = WebTransportRouter(connection: io, role: role)
        webIO = io
        web = router
        makeCore(WebTransportSessionTransport(connection, endpoint: router.endpoint))
        do { handle(try router.endpoint.start()) } catch { webTransportFailed(error) }
    }

    func handle(_ events: [WebTransportEndpoint.Event]) {
        guard let web else { return }
        for event in events {
            switch event {
            case .connectRequest(let request):
                if let status = admitWebTransport?(request) {
                    web.endpoint.reject(status: status)
                    continue
                }
                let protocols = request.protocols
                if !protocols.isEmpty && !protocols.contains(MoqVersion.lite06.rawValue) {
                    // A client that offers protocols speaks one of them: none is ours.
                    web.endpoint.reject(status: 400)
                    continue
                }
                webTransportPath = request.path
                handle(web.accept(protocol: protocols.isEmpty ? nil : MoqVersion.lite06.rawValue))
            case .ready(let selected):
                if let selected, selected != MoqVersion.lite06.rawValue {
                    webTransportFailed(
                        HTTP3Error(HTTP3Error.connectError, "the server chose \(selected), not \(MoqVersion.lite06)"))
                    return
                }
                core?.connected()
            case .sessionStream(let id, let initial, let fin):
                guard let core else { continue }
                core.streamOpened(id)
                if !initial.isEmpty || fin {
                    initial.withUnsafeBytes { core.received(stream: id, data: $0, fin: fin) }
                }
            case .closed(let code, let reason):
                let why = SessionCloseReason.remote(SessionErrorCode(rawValue: UInt64(code)), reason)
                if onReady != nil { fail(.refused(code: UInt64(code), reason: reason)) }
                core?.transportClosed(why)
                finishClose(why)
                connection?.close(code: HTTP3Error.noError, reason: "")
                return
            case .draining:
                onGoaway?("")
            case .rejected(let status):
                let error: MoqError =
                    status == 401 || status == 403
                    ? .refused(
                        code: SessionErrorCode.unauthorized.rawValue,
                        reason: "\(peerDescription) answered the WebTransport CONNECT with HTTP \(status): "
                            + (status == 401
                                ? "this path needs a token" : "the path is outside what the token grants"))
                    : .unreachable(
                        "\(peerDescription) answered the WebTransport CONNECT with HTTP \(status) (\(Self.statusHint(status)))"
                    )
                fail(error)
                let why = SessionCloseReason.transport("WebTransport CONNECT refused with HTTP \(status)")
                core?.transportClosed(why)
                finishClose(why)
                connection?.close(code: HTTP3Error.noError, reason: "")
                return
            }
        }
    }

    /// The HTTP/3 side broke (malformed frames, QPACK that needs a dynamic table, a stream flood):
    /// the connection closes with the HTTP/3 code.
    func webTransportFailed(_ error: HTTP3Error) {
        let why = SessionCloseReason.transport("HTTP/3 error with \(peerDescription): \(error)")
        if onReady != nil { fail(.unreachable("WebTransport with \(peerDescription) failed: \(error)")) }
        core?.transportClosed(why)
        finishClose(why)
        connection?.close(code: error.code, reason: error.reason)
    }

    static func statusHint(_ status: Int) -> String {
        switch status {
        case 400: "the server did not accept the request or the protocols offered"
        case 404: "no such path on the server"
        case 429, 503: "the server is overloaded; try later"
        default: "not a WebTransport endpoint for moq-lite?"
        }
    }
}

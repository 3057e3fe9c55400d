// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqWebTransport
import MoqWire
import MoqtWire

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
        // The core waits for the protocol: the client's for the server's answer, the server's for the CONNECT.
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
                // The first of the client's protocols we speak (moq-dev's rule over WebTransport: the
                // client's order decides); none offered is moq-lite (a client from before the header).
                let protocols = request.protocols
                let chosen = protocols.first { name in
                    name == MoqVersion.lite06.rawValue || ietfVersions.contains { $0.alpn == name }
                }
                if !protocols.isEmpty && chosen == nil {
                    // A client that offers protocols speaks one of them: none is ours.
                    web.endpoint.reject(status: 400)
                    continue
                }
                webTransportPath = request.path
                guard let connection else { return }
                let transport = WebTransportSessionTransport(connection, endpoint: web.endpoint)
                if let chosen, let version = MoqtVersion(alpn: chosen) {
                    transport.mapsStreamCodes = true
                    startIETF(connection, version: version, transport: transport)
                } else {
                    makeCore(transport)
                }
                handle(web.accept(protocol: chosen))
            case .ready(let selected):
                guard let connection else { return }
                if connection.isClient {
                    guard startWebTransportCore(connection, selected: selected) else { return }
                } else if let ietf {
                    ietf.core.connected()
                } else {
                    core?.connected()
                }
            case .sessionStream(let id, let initial, let fin):
                guard let sink else { continue }
                sink.streamOpened(id)
                if !initial.isEmpty || fin {
                    initial.withUnsafeBytes { sink.received(stream: id, data: $0, fin: fin) }
                }
            case .closed(let code, let reason):
                let why = SessionCloseReason.remote(SessionErrorCode(rawValue: UInt64(code)), reason)
                if onReady != nil { fail(.refused(code: UInt64(code), reason: reason)) }
                if let ietf {
                    ietf.core.peerClosed(code: UInt64(code), reason: reason)  // its termination code, as sent
                } else {
                    sink?.transportClosed(why)
                }
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
                sink?.transportClosed(why)
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
        sink?.transportClosed(why)
        finishClose(why)
        connection?.close(code: error.code, reason: error.reason)
    }

    /// A client's CONNECT was answered: the core of the family the server chose (`wt-protocol`)
    /// takes the session. No answer is moq-lite when it was offered (a server from before the
    /// header), else draft-14 (whose version travels in SETUP: Cloudflare's draft-14 relays answer
    /// none). False when the choice is none of ours (the connection is closed).
    private func startWebTransportCore(_ connection: QUICConnection, selected: String?) -> Bool {
        guard let web else { return false }
        let transport = WebTransportSessionTransport(connection, endpoint: web.endpoint)
        switch selected {
        case MoqVersion.lite06.rawValue? where offersMoqLite, nil where offersMoqLite:
            makeCore(transport).connected()
        case nil where ietfVersions.contains(.draft14):
            transport.mapsStreamCodes = true
            startIETF(connection, version: .draft14, transport: transport)
        case let protocolName? where ietfVersions.contains(where: { $0.alpn == protocolName }):
            transport.mapsStreamCodes = true
            startIETF(connection, version: MoqtVersion(alpn: protocolName) ?? .draft16, transport: transport)
        default:
            let offered = ((offersMoqLite ? [MoqVersion.lite06.rawValue] : []) + ietfVersions.map(\.alpn))
            webTransportFailed(
                HTTP3Error(
                    HTTP3Error.connectError,
                    "the server chose \(selected ?? "no protocol"), not \(offered.joined(separator: " or "))"))
            return false
        }
        return true
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

// SPDX-License-Identifier: MIT
import MoqQMux
import MoqSync

extension MoqRelay {
    /// The HTTP endpoint's upgrade handler for the relay `box` holds.
    static func webSocketUpgrade(
        _ box: WeakReference<MoqRelay>
    ) -> @Sendable (HTTPRequestHead, RelayWeb.HandOff) -> HTTPResponse? {
        { head, handOff in
            guard let relay = box.value else { return HTTPResponse(status: 503, body: "shutting down\n") }
            return relay.upgradeWebSocket(head, handOff)
        }
    }

    /// Answers a WebSocket upgrade on the HTTP port (the endpoint's thread): checks the request
    /// (qmux's subprotocol), the peer (any over TLS; loopback unless plain WebSocket is allowed from anywhere) and
    /// the token in the target (401 / 403 before the upgrade, as moq-relay); then hands the socket
    /// to the server's loop. Returns the refusal, or nil when the socket was taken.
    func upgradeWebSocket(_ head: HTTPRequestHead, _ handOff: RelayWeb.HandOff) -> HTTPResponse? {
        let logger = configuration.logger
        let peer = MoqServer.peerAddress(handOff.fd)
        let scope = head.path
        let upgrade: WebSocketHandshake.Upgrade
        switch WebSocketHandshake.check(headers: head.headers) {
        case .failure(let refusal):
            logger.warning("WebSocket upgrade from \(peer) for \(scope) refused (\(refusal.status)): \(refusal.reason)")
            return HTTPResponse(status: refusal.status, body: refusal.reason + "\n")
        case .success(let u): upgrade = u
        }
        guard handOff.tls != nil || configuration.plainWebSocketFromAnyAddress || MoqServer.isLoopback(peer) else {
            logger.warning("WebSocket upgrade from \(peer) refused: plain WebSocket is served to loopback peers only")
            return HTTPResponse(
                status: 403,
                body:
                    "WebSocket without TLS is served to loopback peers only: use wss:// (relay: --websocket-any-address)\n"
            )
        }
        if case .failure(let error) = configuration.auth.authorize(setupPath: head.target) {
            let status = head.target.contains("jwt=") ? 403 : 401
            logger.warning("WebSocket session from \(peer) for \(scope) refused (\(status)): \(error)")
            return HTTPResponse(status: status, body: "\(error)\n")
        }
        guard
            server.acceptWebSocket(
                handOff, target: head.target, response: WebSocketHandshake.response(upgrade), peer: peer)
        else {
            return HTTPResponse(status: 503, body: "too many sessions\n")
        }
        return nil
    }
}

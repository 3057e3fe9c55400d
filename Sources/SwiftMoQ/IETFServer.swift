// SPDX-License-Identifier: MIT
import MoqModel
import MoqQUIC
import MoqSync
import MoqtSession
public import MoqtWire

/// Accepts IETF MoQ Transport sessions on raw QUIC (ALPN `moqt-16`, `moq-00`), serving one origin:
/// the server side of ``IETFSession``. Each session is handed to `onSession` once SETUP completed.
///
/// It offers only IETF ALPNs, so a client that offers both families (moq-dev's lists moq-lite
/// first) lands on IETF here. `MoqServer` (and so the Swift relay) takes both families on one port
/// (``MoqServer/Options/ietfVersions``).
public final class IETFServer: @unchecked Sendable {  // immutable after listen
    /// The UDP port it listens on.
    public let port: UInt16
    /// The SHA-256 fingerprint of its certificate (to pin).
    public let fingerprint: String
    let loop: QUICEventLoop
    let server: QUICServer

    init(port: UInt16, fingerprint: String, loop: QUICEventLoop, server: QUICServer) {
        self.port = port
        self.fingerprint = fingerprint
        self.loop = loop
        self.server = server
    }

    /// Listens on `host:port` (0: any free port) for `versions` (preferred first), serving `origin`.
    /// - Parameter listsNamespaces: false: a SUBSCRIBE_NAMESPACE is accepted and lists nothing, as
    ///   relays that route subscriptions without announcing do (Cloudflare's).
    public static func listen(
        host: String = "127.0.0.1", port: UInt16 = 0,
        certificate: ServerCertificate = .selfSigned(names: ["localhost"]),
        versions: [MoqtVersion] = [.draft16, .draft14], origin: Origin = Origin(), listsNamespaces: Bool = true,
        onSession: @escaping @Sendable (IETFSession) -> Void = { _ in }
    ) throws(MoqError) -> IETFServer {
        guard let preferred = versions.first else { throw .configuration("no MoQ Transport version to offer") }
        var config = MoqtSessionConfig(version: preferred)
        config.listsNamespaces = listsNamespaces
        let identity = try MoqServer.identity(for: certificate)
        let loop: QUICEventLoop
        do { loop = try QUICEventLoop(name: "swiftmoq-ietf") } catch {
            throw .configuration("cannot start the network thread: \(error)")
        }
        var settings = QUICSettings()
        settings.alpn = versions.map(\.alpn)
        settings.automaticFlowControlCredit = false
        let server: QUICServer
        do {
            server = try QUICServer.listen(host: host, port: port, identity: identity, settings: settings, loop: loop) {
                connection in
                let endpoint = IETFConnection(
                    loop: loop, config: config, versions: versions, origin: origin,
                    peerDescription: connection.remoteAddress)
                endpoint.connection = connection
                endpoint.startConnectTimer(.seconds(15))
                endpoint.onReady = { result in
                    guard case .success = result, let version = endpoint.core?.version else { return }
                    onSession(IETFSession(loop: loop, connection: endpoint, origin: origin, version: version))
                }
                return endpoint
            }
        } catch {
            loop.shutdown()
            throw .configuration("cannot listen on \(host):\(port): \(error)")
        }
        return IETFServer(port: server.localPort, fingerprint: identity.fingerprint, loop: loop, server: server)
    }

    /// Stops listening and closes every connection.
    public func close() {
        let server = LoopBound(self.server)
        loop.execute { server.value.close() }
        loop.shutdown()
    }
}

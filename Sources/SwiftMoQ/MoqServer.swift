// SPDX-License-Identifier: MIT
import MoqQUIC
public import MoqSession
import MoqSync
import MoqWebTransport
import MoqtSession
public import MoqtWire

/// Accepts moq-lite-06 sessions over raw QUIC (ALPN `moq-lite-06`) and over WebTransport
/// (ALPN `h3`, on the same UDP port; the ALPN decides), and, when ``Options/ietfVersions`` lists
/// any, IETF MoQ Transport sessions on raw QUIC too (`moqt-16`, `moq-00`, offered after the others:
/// a client that offers both families gets moq-lite), handed to `onIETFSession`.
///
/// Every accepted session serves ``origin`` to its peer; `onSession` receives each
/// session once its SETUP exchange completed, with the client's request path (for a
/// WebTransport session, the CONNECT's path, since such clients put none in SETUP).
public final class MoqServer: @unchecked Sendable {
    /// The UDP port listened on.
    public let port: UInt16
    /// SHA-256 of the certificate new connections get (hex), for clients to pin.
    public var fingerprint: String { currentIdentity.withLock { $0.fingerprint } }
    /// What new connections are presented, QUIC and TLS over TCP alike (`wss://` and HTTPS on a relay's port).
    var identity: ServerIdentity { currentIdentity.withLock { $0 } }
    private let currentIdentity: Lock<ServerIdentity>
    /// What every session serves.
    public let origin: Origin
    /// The event loops connections are spread across (one socket each on the same port).
    let loops: [QUICEventLoop]
    let servers: [QUICServer]
    private let sessions = Lock<[ObjectIdentifier: MoqSession]>([:])
    /// The IETF sessions open (closed with the server).
    let ietfSessions = Lock<[ObjectIdentifier: IETFSession]>([:])
    /// What each session is handed to, and the options it was listened with.
    let onSession: @Sendable (MoqSession, Setup) -> Void
    let options: Options
    /// WebSocket sessions open or setting up (bounded by ``Options/maxConnections``), and the next loop for one.
    let webSocketCount = Lock<(open: Int, next: Int)>((0, 0))

    /// Options of a server.
    public struct Options: Sendable {
        /// The role declared in SETUP (nil: both).
        public var role: SessionRole?
        /// QUIC idle timeout.
        public var idleTimeout: Duration
        /// Largest number of concurrent connections.
        public var maxConnections: Int
        /// Per-session limits.
        public var limits: SessionLimits
        /// The hop id every session declares (a relay keeps one identity); random when nil.
        public var hopID: UInt64?
        /// Handshakes in progress past which new clients must first answer a stateless Retry
        /// (0: every client).
        public var retryThreshold: Int = 64
        /// Handshakes in progress from one IP address.
        public var maxHandshakesPerAddress: Int = 32
        /// How long a connection may be quiet before the server sends a PING (0: never).
        public var keepAliveInterval: Duration = QUICSettings().keepAliveInterval
        /// Event loops (threads) connections are spread across; the kernel steers each datagram to
        /// the loop holding its connection by its connection ID. Limits are shared out between them.
        public var loops: Int = 1
        /// Whether WebTransport clients (ALPN `h3`, browsers, `https://` URLs) are accepted.
        public var webTransport: Bool = true
        /// Decides on a WebTransport CONNECT by its path and query (e.g. a token outside its
        /// grant): returns the HTTP status that refuses it (401, 403, 404), or nil to accept.
        /// Raw QUIC clients are judged after SETUP instead, where their path travels.
        public var admitWebTransportPath: (@Sendable (String) -> Int?)?
        /// The IETF MoQ Transport versions accepted beside moq-lite, on raw QUIC (by ALPN) and over
        /// WebTransport (by the CONNECT's protocols) (none: moq-lite only).
        public var ietfVersions: [MoqtVersion] = []

        public init(
            role: SessionRole? = nil, idleTimeout: Duration = .seconds(10), maxConnections: Int = 1024,
            limits: SessionLimits = SessionLimits()
        ) {
            self.role = role
            self.idleTimeout = idleTimeout
            self.maxConnections = maxConnections
            self.limits = limits
        }
    }

    private init(
        port: UInt16, identity: ServerIdentity, origin: Origin, loops: [QUICEventLoop], servers: [QUICServer],
        options: Options, onSession: @escaping @Sendable (MoqSession, Setup) -> Void
    ) {
        self.options = options
        self.onSession = onSession
        self.port = port
        currentIdentity = Lock(identity)
        self.origin = origin
        self.loops = loops
        self.servers = servers
    }

    /// What the QUIC servers did with packets that were not connections yet, summed over the loops.
    var quicStats: QUICServerStats {
        servers.map(\.stats).reduce(QUICServerStats()) { $0.adding($1) }
    }

    /// Listens on `host:port` (port 0 picks one).
    public static func listen(
        host: String = "127.0.0.1", port: UInt16 = 0,
        certificate: ServerCertificate = .selfSigned(names: ["localhost"]),
        origin: Origin = Origin(), options: Options = Options(),
        onSession: @escaping @Sendable (MoqSession, Setup) -> Void = { _, _ in },
        onIETFSession: @escaping @Sendable (IETFSession) -> Void = { _ in }
    ) throws(MoqError) -> MoqServer {
        let identity = try Self.identity(for: certificate)
        var loops: [QUICEventLoop] = []
        for i in 0..<max(1, options.loops) {
            do {
                loops.append(try QUICEventLoop(name: options.loops > 1 ? "swiftmoq-srv-\(i)" : "swiftmoq-server"))
            } catch {
                for loop in loops { loop.shutdown() }
                throw .configuration("cannot start the network thread: \(error)")
            }
        }
        var settings = QUICSettings()
        // Our order decides: raw QUIC first, so a client offering both (moq-dev's) gets it.
        settings.alpn =
            MoqVersion.alpn + (options.webTransport ? [WebTransportWire.alpn] : []) + options.ietfVersions.map(\.alpn)
        settings.automaticFlowControlCredit = false  // the session core returns credit as it consumes
        settings.idleTimeout = options.idleTimeout
        settings.maxConnections = options.maxConnections
        settings.retryThreshold = options.retryThreshold
        settings.maxHandshakesPerAddress = options.maxHandshakesPerAddress
        settings.keepAliveInterval = options.keepAliveInterval
        let holder = ServerHolder()
        let quic: [QUICServer]
        let allLoops = loops
        do {
            quic = try QUICServer.listen(host: host, port: port, identity: identity, settings: settings, loops: loops) {
                index, connection in
                let loop = allLoops[index]
                var config = SessionConfig(role: options.role, limits: options.limits)
                if let hop = options.hopID { config.hopID = hop }
                let endpoint = SessionConnection(
                    loop: loop, config: config, directory: origin, peerDescription: connection.remoteAddress)
                endpoint.attach(connection)
                if let admit = options.admitWebTransportPath { endpoint.admitWebTransport = { admit($0.path) } }
                endpoint.startConnectTimer(.seconds(15))
                endpoint.ietfVersions = options.ietfVersions  // over WebTransport, the CONNECT chooses
                endpoint.onReady = { result in
                    guard case .success = result, let server = holder.server else { return }
                    if let ietf = endpoint.moqtCore {
                        // MoQ Transport over WebTransport.
                        return server.hand(
                            IETFSession(loop: loop, connection: endpoint, origin: origin, version: ietf.version),
                            to: onIETFSession)
                    }
                    guard let core = endpoint.core else { return }
                    let session = MoqSession(
                        loop: loop, connection: endpoint, origin: origin, url: nil,
                        binding: endpoint.web == nil ? .quic : .webTransport)
                    session.installHandlers()
                    server.track(session)
                    var setup = core.peerSetup ?? Setup()
                    if let path = endpoint.webTransportPath { setup.path = path }
                    onSession(session, setup)
                }
                guard !options.ietfVersions.isEmpty else { return endpoint }
                return FamilyRouter(lite: endpoint, versions: options.ietfVersions) { connection, version in
                    Self.ietfEndpoint(
                        connection, version: version, limits: options.limits, loop: loop, origin: origin,
                        holder: holder, onSession: onIETFSession)
                }
            }
        } catch {
            for loop in loops { loop.shutdown() }
            throw .configuration("cannot listen on \(host):\(port): \(error)")
        }
        let server = MoqServer(
            port: quic[0].localPort, identity: identity, origin: origin, loops: loops, servers: quic,
            options: options, onSession: onSession)
        holder.server = server
        return server
    }

    func track(_ session: MoqSession) {
        let id = ObjectIdentifier(session)
        sessions.withLock { $0[id] = session }
        Task { [weak self] in
            _ = try? await session.closed()
            self?.sessions.withLock { _ = $0.removeValue(forKey: id) }
        }
    }

    /// The sessions currently open.
    public var openSessions: [MoqSession] { sessions.withLock { Array($0.values) } }

    /// An IETF connection on `loop`, bounded by the server's per-session `limits` where they are
    /// tighter than MoQ Transport's defaults: its session serves `origin` until `onSession` (called on the
    /// loop once SETUP completed, before anything is advertised) scopes or closes it.
    private static func ietfEndpoint(
        _ connection: QUICConnection, version: MoqtVersion, limits: SessionLimits, loop: QUICEventLoop,
        origin: Origin, holder: ServerHolder, onSession: @escaping @Sendable (IETFSession) -> Void
    ) -> IETFConnection {
        let endpoint = IETFConnection(
            loop: loop, config: MoqtSessionConfig(version: version).tightened(to: limits), origin: origin,
            peerDescription: connection.remoteAddress)
        endpoint.connection = connection
        endpoint.startConnectTimer(.seconds(15))
        endpoint.onReady = { result in
            guard case .success = result, let server = holder.server else { return }
            server.hand(IETFSession(loop: loop, connection: endpoint, origin: origin, version: version), to: onSession)
        }
        return endpoint
    }

    /// An IETF session whose SETUP completed (raw QUIC or WebTransport): listed while open, then handed
    /// over (on its loop, before anything is advertised to it).
    private func hand(_ session: IETFSession, to onSession: @Sendable (IETFSession) -> Void) {
        let id = ObjectIdentifier(session)
        ietfSessions.withLock { $0[id] = session }
        _ = session.connection.addCloseHandler { [weak self] in
            self?.ietfSessions.withLock { _ = $0.removeValue(forKey: id) }
        }
        onSession(session)
    }

    /// Sends GOAWAY to every session, of both families (optionally pointing elsewhere).
    public func goaway(uri: String = "") {
        for s in openSessions { s.goaway(uri: uri) }
        for s in ietfSessions.withLock({ Array($0.values) }) { s.goaway(uri: uri) }
    }

    /// Closes every session and stops listening.
    public func close() {
        for s in openSessions { s.close() }
        for s in ietfSessions.withLock({ Array($0.values) }) { s.close() }
        for (loop, server) in zip(loops, servers) {
            loop.execute { server.close() }
            loop.shutdown()
        }
    }
}

/// Breaks the reference cycle between the accept closure and the server.
final class ServerHolder: @unchecked Sendable {
    weak var server: MoqServer?
}

extension MoqSession {
    /// Sends GOAWAY to the peer.
    public func goaway(uri: String = "") {
        let conn = connection
        loop.execute {
            conn.value.core?.sendGoaway(uri: uri)
            conn.value.ietf?.core.sendGoaway(uri: uri)
        }
    }
}

extension MoqServer {
    /// Presents `certificate` to connections that start from now on; open sessions keep the one
    /// they started with. Returns the new fingerprint.
    /// - Throws: ``MoqError/configuration(_:)`` when it cannot be loaded or generated.
    @discardableResult
    public func replaceCertificate(_ certificate: ServerCertificate) throws(MoqError) -> String {
        let identity = try Self.identity(for: certificate)
        for server in servers { server.replaceIdentity(identity) }
        currentIdentity.withLock { $0 = identity }
        return identity.fingerprint
    }

    /// Loads or generates the identity `certificate` names.
    static func identity(for certificate: ServerCertificate) throws(MoqError) -> ServerIdentity {
        do {
            switch certificate {
            case .files(let chain, let key): return try ServerIdentity(.files(certificateChain: chain, privateKey: key))
            case .selfSigned(let names): return try ServerIdentity(.selfSigned(names: names))
            }
        } catch {
            throw .configuration("cannot load the server certificate: \(error)")
        }
    }
}

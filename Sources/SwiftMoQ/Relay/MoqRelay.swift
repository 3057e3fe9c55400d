// SPDX-License-Identifier: MIT
import MoqBase
public import MoqQUIC
public import MoqSession
import MoqSync
import MoqWire
import MoqtSession
public import MoqtWire
import Synchronization

/// A moq-lite-06 relay: every session's broadcasts are offered to the others,
/// scoped by connection path and permissions, with one upstream subscription per
/// track fanned out to all subscribers, a cache of recent groups, and optionally
/// links to other relays (``Configuration/peers``, moq-relay's cluster peers) that make it one
/// node of a relay network: routes to a broadcast compete by cost and hops (``RouteChoice``), and
/// a track moves to the next route when its link dies.
///
/// `swiftmoq relay` runs one; the test harness embeds one.
public final class MoqRelay: @unchecked Sendable {
    /// How a relay runs.
    public struct Configuration: Sendable {
        /// Address to listen on.
        public var host: String
        /// UDP port (0 picks one).
        public var port: UInt16
        /// The certificate.
        public var certificate: ServerCertificate
        /// Who may connect where.
        public var auth: RelayAuth
        /// Another relay to join (announce our broadcasts there, serve its broadcasts here).
        public var upstream: MoqURL?
        /// TLS options for the upstream link.
        public var upstreamTLS: TLSOptions
        /// Other relays to link with (moq-relay's `--cluster-connect`); ``upstream`` is one more.
        public var peers: [PeerLink] = []
        /// The hop id this relay declares (moq-relay's `--cluster-id`: stable across restarts, non-zero,
        /// below 2^53 for browsers); random when nil.
        public var clusterID: UInt64?
        /// Caps how long groups stay cached (the track's own max age applies otherwise).
        public var cacheMaxAgeMs: UInt64?
        /// Bytes of groups cached across all tracks.
        public var cacheBytes: Int
        /// Per-session limits (streams, announces, subscriptions, buffered bytes).
        public var limits: SessionLimits
        /// Largest number of concurrent sessions.
        public var maxSessions: Int
        /// Event loops (threads) sessions are spread across, one UDP socket each on the same port;
        /// the kernel steers a datagram to its connection's loop by the connection ID, so a NAT
        /// rebinding keeps it there. `swiftmoq relay --threads N`.
        public var threads: Int = 1
        /// Handshakes in progress past which a new client must first answer a stateless Retry
        /// (proving its address) before the relay keeps any state for it; 0 asks every client.
        public var retryThreshold: Int = 64
        /// Handshakes in progress from one IP address.
        public var maxHandshakesPerAddress: Int = 32
        /// How long a connection may be quiet before the relay sends a PING (0: never). Clients
        /// send their own (moq-dev's and ours); the relay's keeps an idle subscriber's path open
        /// where a client sends none.
        public var keepAliveInterval: Duration = .seconds(3)
        /// Where log lines go.
        public var logger: MoqLogger
        /// Answer HTTP on TCP at the same port number, as moq-relay does (HTTPS too, with the relay's
        /// certificate, to clients that start a TLS handshake): `GET /certificate.sha256`
        /// (the pin for self-signed development relays, what `http://` URLs fetch), `/announced[/prefix]`
        /// (broadcasts under a prefix, one per line; `?jwt=` as for sessions) and `/health`.
        public var serveHTTP = true
        /// Also serve the watch page at `/` (with ``serveHTTP``): a browser connects back over
        /// WebTransport pinned to ``fingerprint``, lists the broadcasts, follows their hang catalog
        /// and plays them with WebCodecs (`web/` in the repository: plain JavaScript modules).
        public var serveWatchPage = false
        /// How often a generated (self-signed) certificate is replaced by a new one: it is valid 14
        /// days (what browsers accept for `serverCertificateHashes`), so the default, 7 days, keeps
        /// the one new clients get at least 6 days from expiry. Open sessions keep theirs; the new
        /// fingerprint is served at once (`/certificate.sha256`, ``fingerprint``). Certificates from
        /// files are not rotated.
        public var certificateRotation: Duration = .seconds(7 * 86_400)
        /// Answer `GET /metrics` (Prometheus' text format: sessions, broadcasts, routes, subscriptions,
        /// bytes, frames and groups in and out, drops by reason, each event loop's CPU and queue, the
        /// links) and `GET /sessions` (the open sessions as JSON) on the HTTP port (with ``serveHTTP``).
        public var serveMetrics = false
        /// Accept moq-lite over WebSocket (qmux, subprotocol `qmux-01.moq-lite-06`) on the HTTP port
        /// (with ``serveHTTP``; `wss://` over TLS with the relay's certificate, `ws://` without), for
        /// clients whose UDP is blocked, as moq-relay does.
        public var serveWebSocket = true
        /// IETF MoQ Transport versions accepted on the relay's UDP port beside moq-lite (raw QUIC;
        /// offered after moq-lite, so a client offering both families gets moq-lite). Such sessions
        /// are authorised like any (the SETUP path and its token), may subscribe to what their grant
        /// allows, and what they publish is relayed like a moq-lite publisher's. Empty: moq-lite only.
        public var ietfVersions: [MoqtVersion] = [.draft16, .draft14]
        /// Plain WebSocket sessions (`ws://`, no TLS) are taken from loopback peers only unless this is
        /// set (a trusted network, or TLS terminated in front of the relay); `wss://` from anyone.
        public var plainWebSocketFromAnyAddress = false
        /// With ``serveMetrics``: the token those two ask for (`Authorization: Bearer <token>` or
        /// `?token=`); nil serves them to anyone who reaches the port.
        public var metricsToken: String?

        public init(
            host: String = "0.0.0.0", port: UInt16 = MoqURL.defaultPort,
            certificate: ServerCertificate = .selfSigned(names: ["localhost"]),
            auth: RelayAuth = RelayAuth(publicPrefixes: [""]),
            upstream: MoqURL? = nil, upstreamTLS: TLSOptions = TLSOptions(), cacheMaxAgeMs: UInt64? = nil,
            cacheBytes: Int = 256 << 20, limits: SessionLimits = SessionLimits(), maxSessions: Int = 1024,
            logger: MoqLogger = .standardError(label: "relay")
        ) {
            self.host = host
            self.port = port
            self.certificate = certificate
            self.auth = auth
            self.upstream = upstream
            self.upstreamTLS = upstreamTLS
            self.cacheMaxAgeMs = cacheMaxAgeMs
            self.cacheBytes = cacheBytes
            self.limits = limits
            self.maxSessions = maxSessions
            self.logger = logger
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// Every broadcast the relay offers, by full path.
    public let origin: Origin
    /// The relay's hop id (declared by every session it holds).
    public let hopID: UInt64
    /// Every route to every broadcast, and the one offered for each.
    let routes: RelayRoutes
    /// The shared cache budget.
    public let cache: CacheBudget
    private(set) var server: MoqServer!
    private let counter = Atomic<UInt64>(0)
    private let ingests = Lock<[ObjectIdentifier: AnnounceIngest]>([:])
    private var linkTasks: [Task<Void, Never>] = []
    private var web: RelayWeb?
    private var rotationTask: Task<Void, Never>?
    /// The open link sessions' ingests, by link index.
    let linkIngests = Lock<[Int: AnnounceIngest]>([:])
    /// The open sessions, accepted and dialled, by id (`/metrics`, `/sessions`).
    private let tracked = Lock<[UInt64: TrackedSession]>([:])
    /// The closed sessions' counters, summed.
    private let closed = Lock(SessionTotals())
    /// Sessions accepted and refused since start.
    let counts = Lock<(accepted: UInt64, refused: UInt64)>((0, 0))

    /// The open sessions, oldest first.
    var trackedSessions: [TrackedSession] { tracked.withLock { $0.values.sorted { $0.id < $1.id } } }
    /// What the closed sessions did.
    var closedTotals: SessionTotals { closed.withLock { $0 } }

    private func track(_ session: TrackedSession) {
        tracked.withLock { $0[session.id] = session }
    }

    private func untrack(_ id: UInt64, _ session: any ObservedSession) {
        _ = tracked.withLock { $0.removeValue(forKey: id) }
        if let final = session.finalStats { closed.withLock { $0.add(final) } }
    }
    private let stopping = Atomic(false)

    /// The port listened on.
    public var port: UInt16 { server.port }
    /// SHA-256 of the certificate (hex), for clients to pin.
    public var fingerprint: String { server.fingerprint }
    /// A URL clients can use (the listening address; `localhost` for a wildcard bind).
    public var url: MoqURL {
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        return try! MoqURL("moql://\(host.contains(":") ? "[\(host)]" : host):\(port)/")
    }
    /// What the relay's QUIC server did with packets that were not connections yet (Retry,
    /// refused handshakes, version negotiation).
    public var quicStats: QUICServerStats { server.quicStats }

    /// Sessions currently open.
    public var sessionCount: Int { server.openSessions.count }
    /// The latency budgets its upstream subscriptions ask for, in ms (tests).
    var upstreamBudgetsMs: [UInt64] { routes.upstreamBudgetsMs }

    /// Upstream subscriptions currently open (one per relayed track in use).
    public var upstreamSubscriptionCount: Int { routes.upstreamCount }

    /// The routes known to a broadcast, the one pulled from first (hops and cost as seen here).
    public func routes(to path: String) -> [AnnounceRoute] { routes.routes(path) }

    /// Peer links whose session is open.
    public var openLinkCount: Int { linkIngests.withLock { $0.count } }

    /// Closes the session of link `index` (``links`` order) as if its network had failed; the link is
    /// redialled as after any failure (tests of failover).
    func dropLink(_ index: Int) {
        linkIngests.withLock { $0[index] }?.session.closeUpstream()
    }

    private init(configuration: Configuration) {
        self.configuration = configuration
        hopID = configuration.clusterID ?? SessionConfig.randomHopID()
        let origin = Origin()
        self.origin = origin
        let budget = CacheBudget(limit: configuration.cacheBytes)
        cache = budget
        routes = RelayRoutes(
            origin: origin, upstreamRange: Self.upstreamRange,
            cacheLimits: CacheLimits(
                maxBytes: configuration.cacheBytes, maxGroups: 4096, maxAgeMs: configuration.cacheMaxAgeMs,
                budget: budget),
            logger: configuration.logger)
    }

    /// Every link to dial: the peers, then the upstream.
    var links: [PeerLink] {
        configuration.peers
            + (configuration.upstream.map { [PeerLink(url: $0, tls: configuration.upstreamTLS)] } ?? [])
    }

    /// What the relay asks of publishers: their whole cache window at normal priority.
    static let upstreamRange = SubscriptionRange(priority: 128, maxLatencyMs: 30_000)

    /// Starts listening (and connecting upstream when configured).
    public static func start(_ configuration: Configuration) throws(MoqError) -> MoqRelay {
        if let id = configuration.clusterID, id == 0 || id > VarInt.max {
            throw .configuration("the cluster id must be a whole number from 1 to 2^62 − 1 (below 2^53 for browsers)")
        }
        let relay = MoqRelay(configuration: configuration)
        var options = MoqServer.Options()
        options.limits = configuration.limits
        options.maxConnections = configuration.maxSessions
        options.loops = max(1, configuration.threads)
        options.hopID = relay.hopID
        options.retryThreshold = configuration.retryThreshold
        options.maxHandshakesPerAddress = configuration.maxHandshakesPerAddress
        options.keepAliveInterval = configuration.keepAliveInterval
        options.ietfVersions = configuration.ietfVersions
        let auth = configuration.auth
        let logger = configuration.logger
        options.admitWebTransportPath = { path in
            // WebTransport clients are judged on their CONNECT, and refused with an HTTP status.
            guard case .failure(let error) = auth.authorize(setupPath: path) else { return nil }
            let status = path.contains("jwt=") ? 403 : 401
            logger.warning(
                "WebTransport session for \(path.split(separator: "?").first ?? "/") refused (\(status)): \(error)")
            return status
        }
        let box = WeakReference(relay)
        // Port 0 asks the kernel for a free UDP port, and the HTTP endpoint needs the same number on TCP,
        // where an unrelated socket may hold it (UDP and TCP ephemeral ports come from one range: an
        // outgoing connection's local port is enough). Such a relay ran without its HTTP endpoint
        // (WebSocket clients refused); now it asks the kernel again.
        let attempts = configuration.port == 0 && configuration.serveHTTP ? 16 : 1
        for attempt in 1...attempts {
            let server = try MoqServer.listen(
                host: configuration.host, port: configuration.port, certificate: configuration.certificate,
                origin: Origin(), options: options,
                onSession: { session, setup in box.value?.accept(session, setup: setup) },
                onIETFSession: { box.value?.acceptIETF($0) })
            relay.server = server
            guard configuration.serveHTTP else { break }
            do {
                let upgrade = configuration.serveWebSocket ? Self.webSocketUpgrade(box) : nil
                relay.web = try RelayWeb(
                    host: configuration.host, port: server.port, tlsIdentity: { box.value?.server?.identity },
                    upgrade: upgrade
                ) { head in
                    box.value?.answer(head) ?? HTTPResponse(status: 503, body: "shutting down\n")
                }
                break
            } catch {
                if attempt < attempts && RelayWeb.isAddressInUse(error) {
                    server.close()
                    continue
                }
                configuration.logger.warning("\(error.description) (the relay runs without it)")
            }
        }
        configuration.logger.info("listening on \(relay.url) (certificate sha256 \(relay.fingerprint))")
        for (index, link) in relay.links.enumerated() { relay.startLink(link, index: index) }
        if case .selfSigned = configuration.certificate { relay.startRotation() }
        return relay
    }

    // MARK: Sessions (server loop thread)

    private func accept(_ session: MoqSession, setup: Setup) {
        let logger = configuration.logger
        let id = counter.add(1, ordering: .relaxed).newValue
        let conn = session.connection.value
        let peer = conn.peerDescription
        guard let core = conn.core,
            let permissions = authorize(
                setup.path, id: id, peer: peer, refuse: { core.close(.unauthorized, reason: $0) })
        else { return }
        track(
            TrackedSession(
                id: id, session: session, kind: permissions.peer ? .peer : .client, peer: peer, root: permissions.root,
                hop: setup.origin, since: .now))
        let over = session.binding == .webTransport ? ", WebTransport" : ""
        let label = "session \(id) (\(peer) /\(permissions.root)\(over))"
        core.publishOrigin = ScopedOrigin(parent: origin, root: permissions.root, allowed: permissions.subscribe)
        conn.onLimit = { logger.warning("\(label): \($0)") }
        logger.info("\(label): connected; \(Self.describe(permissions))")
        let key = ObjectIdentifier(session)
        if !permissions.publish.isEmpty && setup.role != .subscriber {
            // A peer relay's routes compete by cost; a publisher's broadcasts are its grant's own.
            let ingest = AnnounceIngest(
                session: session, routes: routes, hopID: hopID, logger: logger, label: label,
                owner: permissions.peer ? nil : permissions.grant,
                takeoverRefused: { [weak session] path in
                    // One session may not take another's broadcast: a clear refusal, not a silent hijack.
                    session?.close(.unauthorized, reason: "broadcast '\(path)' is published by another session")
                }, map: Self.publishing(permissions))
            ingests.withLock { $0[key] = ingest }
            ingest.start()
        }
        if let expires = permissions.expires {
            // The grant ends with its token: the session does too.
            let remaining = max(0, expires.timeIntervalSinceNow)
            _ = session.loop.schedule(after: .milliseconds(Int64(remaining * 1000))) { [weak session] in
                guard let session, session.closeReason == nil else { return }
                logger.info("\(label): token expired; closing")
                session.close(.unauthorized, reason: "the token expired")
            }
        }
        Task { [weak self] in
            // This task is never cancelled: it ends with the session.
            let reason = (try? await session.closed()).map { "\($0)" } ?? "cancelled"
            let ingest = self?.ingests.withLock { $0.removeValue(forKey: key) }
            ingest?.close()
            self?.untrack(id, session)
            logger.info("\(label): closed (\(reason))")
        }
    }

    // MARK: Peer links

    /// Dials `link` and keeps it open: redialled with a jittered backoff (1 s doubling to 10 s) until
    /// the relay stops. Its session serves this relay's origin below the link's root (split horizon
    /// in every served announcement) and its announcements become routes here.
    private func startLink(_ link: PeerLink, index: Int) {
        let logger = configuration.logger
        let root = BroadcastPath.normalize(link.url.path)
        let name = "peer \(link.url.redacted)"
        var jitter = SeededGenerator(seed: hopID &+ UInt64(index))
        let task = Task { [weak self] in
            var delay: Duration = .seconds(1)
            while let self, !self.stopping.load(ordering: .relaxed), !Task.isCancelled {
                var options = ClientOptions(tls: link.tls, authToken: link.token)
                options.hopID = self.hopID
                options.linkCost = link.cost
                // A cluster link carries moq-lite's hops and costs: never MoQ Transport.
                options.moqProtocol = .moqLite
                let started = ContinuousClock.now
                do {
                    let session: MoqSession = try await MoqSession.connect(
                        link.url, options: options, serving: ScopedOrigin(parent: self.origin, root: root))
                    logger.info("\(name): connected\(link.cost.map { " (cost \($0))" } ?? "")")
                    let ingest = AnnounceIngest(
                        session: session, routes: self.routes, hopID: self.hopID, logger: logger, label: name
                    ) { path in BroadcastPath.join(root, path) }
                    self.linkIngests.withLock { $0[index] = ingest }
                    let id = self.counter.add(1, ordering: .relaxed).newValue
                    self.track(
                        TrackedSession(
                            id: id, session: session, kind: .link, peer: link.url.redacted, root: root, hop: nil,
                            since: .now))
                    ingest.start()
                    let reason: SessionCloseReason? = await withTaskCancellationHandler {
                        // A peer that is leaving says GOAWAY first: its tracks move to other routes
                        // while it still carries them; the link is redialled once it closes.
                        do throws(CancellationError) {
                            if case .goaway = try await session.lifecycleEvent() {
                                logger.info("\(name): GOAWAY")
                                ingest.drain()
                            }
                            return try await session.closed()
                        } catch {
                            return nil  // the relay is stopping
                        }
                    } onCancel: {
                        session.close()
                    }
                    ingest.close()
                    self.linkIngests.withLock { $0[index] = nil }
                    self.untrack(id, session)
                    guard !self.stopping.load(ordering: .relaxed), let reason else { return }
                    // A link that stayed up 10 s counts as stable: the next dial starts from 1 s again.
                    if ContinuousClock.now - started >= .seconds(10) { delay = .seconds(1) }
                    logger.warning("\(name): session ended (\(reason)); redialling")
                } catch let error as MoqError {
                    if error.isFatal {
                        logger.error("\(name): \(error); not retrying")
                        return
                    }
                    logger.warning("\(name): \(error); retrying in \(delay)")
                } catch {
                    logger.warning("\(name): \(error); retrying in \(delay)")
                }
                let spread = Double(jitter.next() % 1000) / 4000  // up to +25 %
                try? await Task.sleep(for: delay * (1 + spread))
                delay = min(delay * 2, .seconds(10))
            }
        }
        linkTasks.append(task)
    }

    /// Statistics of every open session.
    public func sessionStats() async -> [SessionStats] {
        var out: [SessionStats] = []
        for session in server.openSessions {
            guard let stats = try? await session.stats() else { break }  // cancelled
            out.append(stats)
        }
        return out
    }

    /// Sends GOAWAY to every session without closing anything: clients move to a new session
    /// (to `uri`, or this relay again when empty) and close the old one themselves. For
    /// draining a relay before maintenance, or moving clients to another relay.
    public func goaway(uri: String = "") {
        let target = uri.isEmpty ? "" : " (to \(uri))"
        configuration.logger.info("GOAWAY to \(server.openSessions.count) session(s)\(target)")
        server.goaway(uri: uri)
    }

    deinit {
        web?.stop()
        rotationTask?.cancel()
    }

    /// Replaces the generated certificate every ``Configuration/certificateRotation``.
    private func startRotation() {
        let interval = configuration.certificateRotation
        let certificate = configuration.certificate
        let logger = configuration.logger
        rotationTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled, let self else { return }
                do {
                    let fingerprint = try self.server.replaceCertificate(certificate)
                    logger.info("certificate rotated: new connections get sha256 \(fingerprint)")
                } catch {
                    logger.warning("certificate rotation failed (the current one stays): \(error)")
                }
            }
        }
    }

    /// Authorises a session by its SETUP path: its grant, or nil once the refusal is counted, logged
    /// and handed to `refuse` (which closes the session, saying why).
    private func authorize(_ path: String?, id: UInt64, peer: String, refuse: (String) -> Void) -> RelayPermissions? {
        switch configuration.auth.authorize(setupPath: path) {
        case .failure(let error):
            counts.withLock { $0.refused += 1 }
            configuration.logger.warning("session \(id) from \(peer) refused: \(error)")
            refuse(error.description)
            return nil
        case .success(let permissions):
            counts.withLock { $0.accepted += 1 }
            return permissions
        }
    }

    /// What a grant allows, for the log.
    private static func describe(_ p: RelayPermissions) -> String {
        let subscribe = p.subscribe.map { "'\($0)'" }.joined(separator: ", ")
        let publish = p.publish.isEmpty ? "nothing" : p.publish.map { "'\($0)'" }.joined(separator: ", ")
        return "may subscribe to \(subscribe); publish to \(publish)"
    }

    /// The relay's path for one a publisher of `permissions` announces, or nil outside its grant.
    private static func publishing(_ permissions: RelayPermissions) -> @Sendable (String) -> String? {
        let root = permissions.root
        return { path in permissions.canPublish(path) ? BroadcastPath.join(root, path) : nil }
    }

    // MARK: IETF sessions (server loop thread)

    /// An IETF MoQ Transport session, once SETUP completed and before anything is advertised to it:
    /// authorised by its SETUP path like any session, then served the part of the origin its grant
    /// lets it subscribe to (the relay's tracks, pulled from their publishers on demand).
    func acceptIETF(_ session: IETFSession) {
        let logger = configuration.logger
        let endpoint = session.connection
        let id = counter.add(1, ordering: .relaxed).newValue
        guard let core = endpoint.moqtCore,
            let permissions = authorize(
                core.peerPath, id: id, peer: "\(endpoint.peerDescription) (IETF)",
                refuse: { core.close(.unauthorized, reason: $0) })
        else { return }
        core.publishOrigin = ScopedOrigin(parent: origin, root: permissions.root, allowed: permissions.subscribe)
        // PUBLISH_NAMESPACE outside its grant is refused, not accepted and left unrouted.
        let publishing = Self.publishing(permissions)
        core.acceptsPeerNamespace = { path in publishing(path) != nil }
        let label = "session \(id) (\(endpoint.peerDescription) /\(permissions.root), IETF \(session.version))"
        logger.info("\(label): connected; \(Self.describe(permissions))")
        track(
            TrackedSession(
                id: id, session: session, kind: permissions.peer ? .peer : .client, peer: endpoint.peerDescription,
                root: permissions.root, hop: nil, since: .now))
        _ = endpoint.addCloseHandler { [weak self] in
            self?.untrack(id, session)
            logger.info("\(label): closed (\(endpoint.moqtCore?.closeReason.map { "\($0)" } ?? "ended"))")
        }
        if !permissions.publish.isEmpty {
            // What it publishes (PUBLISH_NAMESPACE, or NAMESPACE answers) becomes routes through it, owned by its grant.
            let key = ObjectIdentifier(session)
            let ingest = AnnounceIngest(
                ietf: session, routes: routes, hopID: hopID, logger: logger, label: label,
                owner: permissions.peer ? nil : permissions.grant,
                takeoverRefused: { [weak session] path in
                    session?.close(.unauthorized, reason: "broadcast '\(path)' is published by another session")
                }, map: publishing)
            ingests.withLock { $0[key] = ingest }
            _ = endpoint.addCloseHandler { [weak self] in
                self?.ingests.withLock { $0.removeValue(forKey: key) }?.close()
            }
            ingest.start()
        }
        if let expires = permissions.expires {
            let remaining = max(0, expires.timeIntervalSinceNow)
            let weak = WeakReference(core)  // the session may end long before its token
            _ = session.loop.schedule(after: .milliseconds(Int64(remaining * 1000))) {
                guard let core = weak.value, !core.isClosed else { return }
                logger.info("\(label): token expired; closing")
                core.close(.unauthorized, reason: "the token expired")
            }
        }
    }

    // MARK: HTTP (the endpoint's thread)

    /// The TCP port of the HTTP endpoint, when it runs.
    public var httpPort: UInt16? { web?.port }

    func answer(_ head: HTTPRequestHead) -> HTTPResponse {
        switch head.path {
        case "/certificate.sha256":
            return HTTPResponse(status: 200, body: fingerprint)
        case "/health":
            return HTTPResponse(status: 200, body: "ok\n")
        case "/metrics":
            if let refused = refuseObservability(head) { return refused }
            return HTTPResponse(
                status: 200, body: metricsText(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/sessions":
            if let refused = refuseObservability(head) { return refused }
            return HTTPResponse(status: 200, body: sessionsJSON(), contentType: "application/json")
        case "/" where configuration.serveWatchPage:
            return Self.asset("/index.html")
        case _ where configuration.serveWatchPage && WebAssets.files[head.path] != nil:
            return Self.asset(head.path)
        case _ where head.path.hasPrefix("/fetch/"):
            return fetch(head)
        case _ where head.path == "/announced" || head.path.hasPrefix("/announced/"):
            let prefix = head.path == "/announced" ? "" : String(head.path.dropFirst("/announced/".count))
            let query = head.query["jwt"].map { "?jwt=" + PercentEncoding.encode($0) } ?? ""
            switch configuration.auth.authorize(setupPath: prefix + query) {
            case .failure(let error):
                return HTTPResponse(status: 401, body: "\(error.description)\n")
            case .success(let permissions):
                let scoped = ScopedOrigin(parent: origin, root: permissions.root, allowed: permissions.subscribe)
                let (token, current) = scoped.observe(prefix: "") { _ in }
                scoped.stopObserving(token)
                return HTTPResponse(status: 200, body: current.map(\.path).joined(separator: "\n"))
            }
        default:
            return HTTPResponse(status: 404, body: notFoundText(head.path))
        }
    }

    /// A 404 that says what this endpoint serves, so a mistyped path finds the right one.
    func notFoundText(_ path: String) -> String {
        var served = [
            "/certificate.sha256", "/health", "/announced[/PREFIX]", "/fetch/BROADCAST/TRACK[?group=N|latest&frame=N]",
        ]
        if configuration.serveWatchPage {
            served.insert("/ (the watch page, playing broadcasts under /anon unless its url= says another root)", at: 0)
        }
        if configuration.serveMetrics { served += ["/metrics", "/sessions"] }
        return "Not found: \(path)\nThis relay serves: \(served.joined(separator: ", "))\n"
    }

    static func asset(_ path: String) -> HTTPResponse {
        guard let file = WebAssets.files[path] else { return HTTPResponse(status: 404, body: "Not found\n") }
        return HTTPResponse(status: 200, body: file.text, contentType: file.contentType)
    }

    // MARK: Shutdown

    /// Sends GOAWAY to every session, waits up to `grace` for them to leave, then
    /// closes everything.
    public func shutdown(grace: Duration = .seconds(2)) async {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        configuration.logger.info("shutting down: GOAWAY to \(server.openSessions.count) session(s)")
        server.goaway()
        let deadline = ContinuousClock.now + grace
        while server.openSessions.count > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for task in linkTasks { task.cancel() }
        rotationTask?.cancel()
        web?.stop()
        server.close()
        for ingest in ingests.withLock({ Array($0.values) }) { ingest.close() }
        for ingest in linkIngests.withLock({ Array($0.values) }) { ingest.close() }
        routes.close()
    }
}

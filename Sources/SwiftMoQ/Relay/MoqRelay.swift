// SPDX-License-Identifier: MIT
public import MoqQUIC
public import MoqSession
import MoqSync
import MoqWire
import Synchronization

/// A moq-lite-06 relay: every session's broadcasts are offered to the others,
/// scoped by connection path and permissions, with one upstream subscription per
/// track fanned out to all subscribers, a cache of recent groups, and optionally
/// a link to another relay (`upstream`) to join an existing relay network.
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
        /// Caps how long groups stay cached (the track's own max age applies otherwise).
        public var cacheMaxAgeMs: UInt64?
        /// Bytes of groups cached across all tracks.
        public var cacheBytes: Int
        /// Per-session limits (streams, announces, subscriptions, buffered bytes).
        public var limits: SessionLimits
        /// Largest number of concurrent sessions.
        public var maxSessions: Int
        /// Handshakes in progress past which a new client must first answer a stateless Retry
        /// (proving its address) before the relay keeps any state for it; 0 asks every client.
        public var retryThreshold: Int = 64
        /// Handshakes in progress from one IP address.
        public var maxHandshakesPerAddress: Int = 32
        /// Where log lines go.
        public var logger: MoqLogger
        /// Answer HTTP on TCP at the same port number, as moq-relay does: `GET /certificate.sha256`
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
    public let origin = Origin()
    /// The relay's hop id (declared by every session it holds).
    public let hopID = SessionConfig.randomHopID()
    /// The shared cache budget.
    public let cache: CacheBudget
    private var server: MoqServer!
    private let counter = Atomic<UInt64>(0)
    private let ingests = Lock<[ObjectIdentifier: AnnounceIngest]>([:])
    private var upstreamTask: Task<Void, Never>?
    private var web: RelayWeb?
    private var rotationTask: Task<Void, Never>?
    private let upstreamIngest = Lock<AnnounceIngest?>(nil)
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
    public var quicStats: QUICServerStats { server.server.stats }

    /// Sessions currently open.
    public var sessionCount: Int { server.openSessions.count }
    /// The latency budgets its upstream subscriptions ask for, in ms (tests).
    var upstreamBudgetsMs: [UInt64] {
        ingests.withLock { $0.values.flatMap(\.upstreamBudgetsMs) }
            + (upstreamIngest.withLock { $0?.upstreamBudgetsMs } ?? [])
    }

    /// Upstream subscriptions currently open (one per relayed track in use).
    public var upstreamSubscriptionCount: Int {
        ingests.withLock { $0.values.reduce(0) { $0 + $1.upstreamCount } }
            + (upstreamIngest.withLock { $0?.upstreamCount } ?? 0)
    }

    private init(configuration: Configuration) {
        self.configuration = configuration
        cache = CacheBudget(limit: configuration.cacheBytes)
    }

    var cacheLimits: CacheLimits {
        CacheLimits(
            maxBytes: configuration.cacheBytes, maxGroups: 4096, maxAgeMs: configuration.cacheMaxAgeMs, budget: cache)
    }

    /// What the relay asks of publishers: their whole cache window at normal priority.
    static let upstreamRange = SubscriptionRange(priority: 128, maxLatencyMs: 30_000)

    /// Starts listening (and connecting upstream when configured).
    public static func start(_ configuration: Configuration) throws(MoqError) -> MoqRelay {
        let relay = MoqRelay(configuration: configuration)
        var options = MoqServer.Options()
        options.limits = configuration.limits
        options.maxConnections = configuration.maxSessions
        options.hopID = relay.hopID
        options.retryThreshold = configuration.retryThreshold
        options.maxHandshakesPerAddress = configuration.maxHandshakesPerAddress
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
        relay.server = try MoqServer.listen(
            host: configuration.host, port: configuration.port, certificate: configuration.certificate,
            origin: Origin(), options: options
        ) { session, setup in
            box.value?.accept(session, setup: setup)
        }
        configuration.logger.info("listening on \(relay.url) (certificate sha256 \(relay.fingerprint))")
        if configuration.serveHTTP {
            do {
                relay.web = try RelayWeb(host: configuration.host, port: relay.port) { head in
                    box.value?.answer(head) ?? HTTPResponse(status: 503, body: "shutting down\n")
                }
            } catch {
                configuration.logger.warning("\(error.description) (the relay runs without it)")
            }
        }
        if let upstream = configuration.upstream { relay.startUpstream(upstream) }
        if case .selfSigned = configuration.certificate { relay.startRotation() }
        return relay
    }

    // MARK: Sessions (server loop thread)

    private func accept(_ session: MoqSession, setup: Setup) {
        let logger = configuration.logger
        let id = counter.add(1, ordering: .relaxed).newValue
        let conn = session.connection.value
        let peer = conn.peerDescription
        guard let core = conn.core else { return }
        let permissions: RelayPermissions
        switch configuration.auth.authorize(setupPath: setup.path) {
        case .failure(let error):
            logger.warning("session \(id) from \(peer) refused: \(error)")
            core.close(.unauthorized, reason: error.description)
            return
        case .success(let p):
            permissions = p
        }
        let over = session.binding == .webTransport ? ", WebTransport" : ""
        let label = "session \(id) (\(peer) /\(permissions.root)\(over))"
        core.publishOrigin = ScopedOrigin(parent: origin, root: permissions.root, allowed: permissions.subscribe)
        conn.onLimit = { logger.warning("\(label): \($0)") }
        logger.info(
            "\(label): connected; may subscribe to \(permissions.subscribe.map { "'\($0)'" }.joined(separator: ", ")); publish to \(permissions.publish.isEmpty ? "nothing" : permissions.publish.map { "'\($0)'" }.joined(separator: ", "))"
        )
        let key = ObjectIdentifier(session)
        if !permissions.publish.isEmpty && setup.role != .subscriber {
            let root = permissions.root
            let ingest = AnnounceIngest(
                session: session, origin: origin, hopID: hopID, upstreamRange: Self.upstreamRange,
                cacheLimits: cacheLimits, logger: logger, label: label, owner: permissions.grant,
                takeoverRefused: { [weak session] path in
                    // One session may not take another's broadcast: a clear refusal, not a silent hijack.
                    session?.close(.unauthorized, reason: "broadcast '\(path)' is published by another session")
                }
            ) { path in
                permissions.canPublish(path) ? BroadcastPath.join(root, path) : nil
            }
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
            let reason = await session.closed()
            let ingest = self?.ingests.withLock { $0.removeValue(forKey: key) }
            ingest?.close()
            logger.info("\(label): closed (\(reason))")
        }
    }

    // MARK: Upstream

    private func startUpstream(_ url: MoqURL) {
        let logger = configuration.logger
        let tls = configuration.upstreamTLS
        let root = BroadcastPath.normalize(url.path)
        upstreamTask = Task { [weak self] in
            var delay: Duration = .seconds(1)
            while let self, !self.stopping.load(ordering: .relaxed), !Task.isCancelled {
                var options = ClientOptions(tls: tls)
                options.hopID = self.hopID
                do {
                    let session: MoqSession = try await MoqSession.connect(
                        url, options: options, serving: ScopedOrigin(parent: self.origin, root: root))
                    logger.info("upstream \(url.redacted): connected")
                    delay = .seconds(1)
                    let ingest = AnnounceIngest(
                        session: session, origin: self.origin, hopID: self.hopID, upstreamRange: Self.upstreamRange,
                        cacheLimits: self.cacheLimits, logger: logger, label: "upstream \(url.redacted)"
                    ) { path in BroadcastPath.join(root, path) }
                    self.upstreamIngest.withLock { $0 = ingest }
                    ingest.start()
                    let reason = await withTaskCancellationHandler {
                        await session.closed()
                    } onCancel: {
                        session.close()
                    }
                    ingest.close()
                    self.upstreamIngest.withLock { $0 = nil }
                    if self.stopping.load(ordering: .relaxed) { return }
                    logger.warning("upstream \(url.redacted): session ended (\(reason)); reconnecting")
                } catch let error as MoqError {
                    if error.isFatal {
                        logger.error("upstream \(url.redacted): \(error); not retrying")
                        return
                    }
                    logger.warning("upstream \(url.redacted): \(error); retrying in \(delay)")
                } catch {
                    logger.warning("upstream \(url.redacted): \(error); retrying in \(delay)")
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Statistics of every open session.
    public func sessionStats() async -> [SessionStats] {
        var out: [SessionStats] = []
        for session in server.openSessions { out.append(await session.stats()) }
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

    // MARK: HTTP (the endpoint's thread)

    /// The TCP port of the HTTP endpoint, when it runs.
    public var httpPort: UInt16? { web?.port }

    func answer(_ head: HTTPRequestHead) -> HTTPResponse {
        switch head.path {
        case "/certificate.sha256":
            return HTTPResponse(status: 200, body: fingerprint)
        case "/health":
            return HTTPResponse(status: 200, body: "ok\n")
        case "/" where configuration.serveWatchPage:
            return Self.asset("/index.html")
        case _ where configuration.serveWatchPage && WebAssets.files[head.path] != nil:
            return Self.asset(head.path)
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
            return HTTPResponse(status: 404, body: "Not found\n")
        }
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
        upstreamTask?.cancel()
        rotationTask?.cancel()
        web?.stop()
        server.close()
        for ingest in ingests.withLock({ Array($0.values) }) { ingest.close() }
        upstreamIngest.withLock { $0 }?.close()
    }
}

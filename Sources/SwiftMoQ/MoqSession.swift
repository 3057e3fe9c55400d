// SPDX-License-Identifier: MIT
import MoqQUIC
public import MoqSession
import MoqSync
import MoqWebTransport
public import MoqWire

/// A moq-lite-06 session with a relay (or any moq-lite peer), over raw QUIC or WebTransport, or
/// an IETF MoQ Transport session on raw QUIC when the server chose that family
/// (``ClientOptions/moqProtocol``; ``version`` says which): one API over either.
///
/// Publish by adding broadcasts to ``origin`` (the peer learns of them through its
/// announce requests); subscribe with ``subscribe(broadcast:track:range:)``;
/// discover with ``announced(prefix:)``. Thread-safe: every call may come from any
/// thread; the work runs on the session's network thread.
public final class MoqSession: @unchecked Sendable {
    /// Where ``publish(_:)`` puts broadcasts.
    public let origin: Origin
    /// The URL connected to (clients).
    public let url: MoqURL?
    /// The negotiated protocol: `moq-lite-06`, or MoQ Transport's ALPN (`moqt-16`, `moq-00` for draft-14).
    public var version: String { negotiated.withLock { $0 } }
    /// True when the session speaks IETF MoQ Transport.
    public var isIETF: Bool { version != MoqVersion.lite06.rawValue }
    private let negotiated = Lock<String>(MoqVersion.lite06.rawValue)
    let loop: QUICEventLoop
    let connection: LoopBound<SessionConnection>
    private let closeState = Lock<CloseState>(CloseState())
    /// The QUIC connection, for ``receivedBytes`` from any thread.
    private let quic = Lock<QUICConnection?>(nil)
    /// The WebSocket carrier's byte counts, for a session over qmux.
    private let webSocketCounts = Lock<QMuxLink.ByteCounts?>(nil)

    struct CloseState {
        var reason: SessionCloseReason?
        var waiters = CancellableWaiters<SessionCloseReason>()
        var goaway: String?
        var eventWaiters = CancellableWaiters<LifecycleEvent>()
        /// The statistics when it closed.
        var final: SessionStats?
    }

    /// What ends a session's life as a client knows it.
    public enum LifecycleEvent: Sendable, Equatable {
        /// The peer asked us to go away (GOAWAY), to this URI (empty: reconnect where we are).
        case goaway(String)
        /// The session ended.
        case closed(SessionCloseReason)
    }

    /// What the session runs over.
    public let binding: SessionBinding

    init(loop: QUICEventLoop, connection: SessionConnection, origin: Origin, url: MoqURL?, binding: SessionBinding) {
        self.loop = loop
        self.connection = LoopBound(connection)
        self.origin = origin
        self.url = url
        self.binding = binding
    }

    /// Called on the loop thread once the connection is set up.
    func installHandlers() {
        quic.withLock { $0 = connection.value.connection }
        if let version = connection.value.negotiatedVersion { negotiated.withLock { $0 = version } }
        webSocketCounts.withLock { $0 = connection.value.qmuxLink?.counts }
        let box = WeakReference(self)
        connection.value.onClose = { reason in box.value?.didClose(reason) }
        connection.value.onGoaway = { uri in box.value?.goawayArrived(uri) }
        if let reason = connection.value.closeReason { didClose(reason) }
    }

    // MARK: Connecting

    /// Connects to `url` and completes the SETUP exchange.
    public static func connect(_ url: String, options: ClientOptions = ClientOptions()) async throws(MoqError)
        -> MoqSession
    {
        try await connect(MoqURL(url), options: options)
    }

    /// Connects to `url` and completes the SETUP exchange.
    ///
    /// - Parameters:
    ///   - origin: where ``publish(_:)`` puts broadcasts.
    ///   - serving: what the peer may see and subscribe to; `origin` when nil (a relay
    ///     passes a scoped view of its whole origin here).
    public static func connect(
        _ url: MoqURL, options: ClientOptions = ClientOptions(), origin: Origin = Origin(),
        serving: (any BroadcastDirectory)? = nil
    ) async throws(MoqError) -> MoqSession {
        try await connect(url, options: options, origin: origin, serving: serving, answered: nil)
    }

    /// ``connect(_:options:origin:serving:)``, recording in `answered` whether the peer had sent
    /// anything when the attempt timed out (``ReconnectingSession`` then gives the next one longer).
    static func connect(
        _ url: MoqURL, options: ClientOptions, origin: Origin = Origin(), serving: (any BroadcastDirectory)? = nil,
        answered: Lock<Bool>?
    ) async throws(MoqError) -> MoqSession {
        let target = options.authToken.map { url.addingToken($0) } ?? url
        if !options.moqProtocol.offersMoqLite, target.isWebSocket {
            throw .configuration(
                "protocol \(options.moqProtocol) (IETF MoQ Transport) runs on QUIC and WebTransport here: use a moql:// or https:// URL, or protocol auto or moq-lite for \(url.scheme)://"
            )
        }
        if target.isWebSocket {
            return try await connectWebSocket(
                target, options: options, origin: origin, serving: serving, answered: answered)
        }
        // The WebSocket fallback carries moq-lite only: an IETF-only client does not race it.
        if target.isWebTransport, options.moqProtocol.offersMoqLite, let delay = options.webSocketDelay {
            return try await connectRacing(
                target, delay: delay, options: options, origin: origin, serving: serving, answered: answered)
        }
        return try await connectOver(target, options: options, origin: origin, serving: serving, answered: answered)
    }

    /// Raw QUIC or WebTransport (the URL's scheme says which).
    static func connectOver(
        _ target: MoqURL, options: ClientOptions, origin: Origin, serving: (any BroadcastDirectory)?,
        answered: Lock<Bool>?
    ) async throws(MoqError) -> MoqSession {
        var verification = try options.tls.verification()
        if target.fetchesCertificateHash, case .system = verification {
            // http://: the relay publishes its self-signed certificate's hash; pin that one.
            let hash = try await CertificateHashFetch.fetch(
                host: target.host, port: target.port, timeout: options.connectTimeout)
            verification = .fingerprints([hash])
        }
        let tls = TLSClientConfiguration(verification: verification)
        var settings = QUICSettings()
        settings.alpn = target.isWebTransport ? [WebTransportWire.alpn] : options.moqProtocol.alpns
        settings.automaticFlowControlCredit = false  // the session core returns credit as it consumes
        settings.idleTimeout = options.idleTimeout
        // A client that only receives (a player) sends nothing until a packet arrives, and after
        // a NAT rebinding nothing arrives until the server hears it from the new address: the
        // keep-alive PING is what reaches it. 3 s of frozen video became 1 s (docs/reliability.md).
        settings.keepAliveInterval = options.keepAliveInterval
        settings.handshakeTimeout = options.connectTimeout
        let webRequest =
            target.isWebTransport
            ? WebTransportConnect.Request(
                authority: target.authority, path: target.setupPath, protocols: options.moqProtocol.alpns) : nil
        let quicSettings = settings
        // Over WebTransport the path travels in the CONNECT, never in SETUP (moq-dev's rule).
        return try await establish(
            target, binding: target.isWebTransport ? .webTransport : .quic,
            setupPath: target.isWebTransport ? nil : target.setupPath, options: options, origin: origin,
            serving: serving, answered: answered
        ) { endpoint in
            endpoint.webTransportRequest = webRequest
            endpoint.ietfVersions = options.moqProtocol.ietfVersions
            endpoint.offersMoqLite = options.moqProtocol.offersMoqLite
            endpoint.attach(
                QUICClient.connect(
                    host: target.host, port: target.port, tls: tls, settings: quicSettings, loop: endpoint.loop,
                    delegate: endpoint))
        }
    }

    /// Builds a client session on a network thread, lets `dial` start its transport there, and
    /// waits until SETUP completed (or the attempt failed, or `connectTimeout` passed).
    static func establish(
        _ target: MoqURL, binding: SessionBinding, setupPath: String?, options: ClientOptions, origin: Origin,
        serving: (any BroadcastDirectory)?, answered: Lock<Bool>?,
        dial: @escaping @Sendable (SessionConnection) -> Void
    ) async throws(MoqError) -> MoqSession {
        let loop = try SharedLoop.get()
        var sessionConfig = SessionConfig(role: options.role, path: setupPath)
        if let hop = options.hopID { sessionConfig.hopID = hop }
        sessionConfig.linkCost = options.linkCost
        let config = sessionConfig
        let peer = "\(target.host):\(target.port)"
        // The session is built on the loop thread and handed to this task through a lock as well
        // as the continuation: a continuation resumed from a plain thread synchronises inside the
        // uninstrumented concurrency runtime, so ThreadSanitizer saw the session's `let`s (written
        // in init on the loop) as racing with their first read here. The lock makes the hand-off
        // visible; it costs one uncontended mutex per connect.
        let outcome = Lock<Result<MoqSession, MoqError>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let endpoint = SessionConnection(
                    loop: loop, config: config, directory: serving ?? origin, peerDescription: peer)
                let session = MoqSession(
                    loop: loop, connection: endpoint, origin: origin, url: target, binding: binding)
                endpoint.peerAnsweredBeforeTimeout = answered
                endpoint.onReady = { result in
                    switch result {
                    case .success:
                        session.installHandlers()
                        outcome.withLock { $0 = .success(session) }
                    case .failure(let error):
                        outcome.withLock { $0 = .failure(error) }
                    }
                    continuation.resume()
                }
                dial(endpoint)
                endpoint.startConnectTimer(options.connectTimeout)
            }
        }
        guard let result = outcome.withLock({ $0 }) else { throw .closed("the connection ended before it was set up") }
        return try result.get()
    }

    // MARK: Publishing

    /// How many network threads the client sessions of this process share (1 to 64; default 1).
    /// Each session connected after a change goes to the next thread in turn; sessions already
    /// connected stay where they are. One thread serves a player or a publisher well; a process
    /// holding hundreds of sessions (a load generator, a monitoring probe) spreads them over the
    /// cores. A session's work always stays on its own thread.
    public static var clientNetworkThreads: Int {
        get { SharedLoop.threads }
        set { SharedLoop.threads = newValue }
    }

    /// Publishes a broadcast to the peer (announced under its path).
    public func publish(_ broadcast: BroadcastProducer) {
        origin.publish(broadcast)
    }

    // MARK: Subscribing

    /// Events an ``announced(prefix:)`` stream buffers for a reader that has not taken them;
    /// a reader further behind than this loses the stream (it ends) rather than the relay's
    /// announcements filling its memory.
    public static let maxBufferedAnnouncements = 10_000

    /// Announcements under `prefix` from the peer, and of this session's own broadcasts
    /// (``publish(_:)``): a relay does not echo a publisher's broadcasts back to it, and an
    /// application that shares one connection between publishing and playing sees both. The
    /// stream ends when the announce stream or the session closes (or when the reader falls
    /// ``maxBufferedAnnouncements`` behind).
    public func announced(prefix: String = "") -> AsyncStream<AnnounceEvent> {
        let (stream, continuation) = AsyncStream<AnnounceEvent>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.maxBufferedAnnouncements))
        let conn = connection
        let box = CancelBox()
        let loop = self.loop
        let merge = AnnounceMerge(continuation) { loop.execute { box.run() } }
        let origin = self.origin
        let (token, current) = origin.observe(prefix: BroadcastPath.normalize(prefix)) { event in
            switch event {
            case .announced(let path, let route): merge.local(.active(path: path, route: route))
            case .unannounced(let path): merge.local(.ended(path: path))
            }
        }
        // Changes that raced ahead of the snapshot wait for it (they come after it).
        merge.replayLocal(current.map { AnnounceEvent.active(path: $0.path, route: $0.route) })
        loop.execute {
            guard let core = conn.value.client, !core.isClosed else {
                merge.remote(.closed(.sessionClosed))
                return
            }
            let handle = core.requestAnnouncements(prefix: prefix) { event in merge.remote(event) }
            box.set(handle)
        }
        continuation.onTermination = { _ in
            origin.stopObserving(token)
            loop.execute { box.run() }
        }
        return stream
    }

    /// Waits until the peer announces `path` (exactly), or throws after `timeout`.
    public func waitForBroadcast(_ path: String, timeout: Duration = .seconds(10)) async throws(MoqError) {
        let target = BroadcastPath.normalize(path)
        let found = await withTaskGroup(of: Bool.self) { group -> Bool in
            group.addTask {
                for await event in self.announced(prefix: target) {
                    if case .active(let p, _) = event, p == target { return true }
                    if case .closed = event { return false }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !found {
            if let reason = closeReason { throw .closed("session closed: \(reason)") }
            throw .broadcastNotFound(target)
        }
    }

    /// Subscribes to a track of the peer. Frames arrive in ``RemoteTrack/track``;
    /// failures (unknown broadcast or track, publisher gone) end it with a code.
    ///
    /// A broadcast this session publishes itself is read where it is made, without the network
    /// (a relay would not route it back): the track is the published one.
    ///
    /// - Parameter limits: the bounds of the cache the subscription writes into (a long-form
    ///   player keeps its deep buffer there: ``CacheLimits/retaining(ms:)``).
    public func subscribe(
        broadcast: String, track name: String, range: SubscriptionRange = SubscriptionRange(),
        limits: CacheLimits = CacheLimits()
    )
        -> RemoteTrack
    {
        let path = BroadcastPath.normalize(broadcast)
        if let local = origin.broadcast(path) {
            if let track = local.track(name) { return RemoteTrack(session: self, broadcast: path, track: track) }
            let missing = TrackProducer(name: name, info: nil)
            missing.abort(.notFound)
            return RemoteTrack(session: self, broadcast: path, track: missing)
        }
        return subscribe(broadcast: broadcast, range: range, into: TrackProducer(name: name, info: nil, limits: limits))
    }

    /// Subscribes to the peer's track named like `track`, writing what arrives into
    /// `track` (its info is filled from TRACK_INFO when nil). Relays use this to feed
    /// the tracks their own subscribers read.
    ///
    /// - Parameter sessionClosedCode: what `track` ends with if this session closes first (a relay
    ///   passes INTERNAL: its subscribers are reset as moq-relay resets them when a publisher goes);
    ///   nil leaves it open, for the caller to feed it from another session (a relay's failover).
    /// - Parameter onLost: asked on the session's loop when the peer ends the subscription with an
    ///   error; returning true leaves `track` open (the caller feeds it from elsewhere).
    public func subscribe(
        broadcast: String, range: SubscriptionRange = SubscriptionRange(), into track: TrackProducer,
        sessionClosedCode: StreamErrorCode? = .sessionClosed, onLost: (@Sendable (StreamErrorCode) -> Bool)? = nil
    )
        -> RemoteTrack
    {
        let remote = RemoteTrack(session: self, broadcast: BroadcastPath.normalize(broadcast), track: track)
        let conn = connection
        loop.execute {
            guard let core = conn.value.client, !core.isClosed else {
                if let sessionClosedCode { track.abort(sessionClosedCode) }
                return
            }
            remote.handle = core.subscribeTrack(
                broadcast: broadcast, track: track, range: range, sessionClosedCode: sessionClosedCode, onLost: onLost)
        }
        return remote
    }

    /// Asks the peer for a track's info.
    public func trackInfo(broadcast: String, track: String) async throws(MoqError) -> TrackInfo {
        try refuseOnIETF("TRACK_INFO")
        let conn = connection
        let result: Result<TrackInfo, StreamErrorCode> = await withCheckedContinuation { continuation in
            loop.execute {
                guard let core = conn.value.client, !core.isClosed else {
                    return continuation.resume(returning: .failure(.sessionClosed))
                }
                core.trackInfo(broadcast: broadcast, track: track) { continuation.resume(returning: $0) }
            }
        }
        return try result.mapError { MoqError.from($0, broadcast: broadcast, track: track) }.get()
    }

    /// Fetches one group (or a frame range of it). Over MoQ Transport, a standalone FETCH (frames
    /// come with timestamp 0; moq-dev's relays refuse it).
    public func fetch(
        broadcast: String, track: String, group: UInt64, frameStart: UInt64 = 0, frameEnd: UInt64? = nil,
        priority: UInt8 = 0
    ) async throws(MoqError) -> [Frame] {
        let conn = connection
        let request = Fetch(
            broadcast: broadcast, track: track, priority: priority, group: group, frameStart: frameStart,
            frameEnd: frameEnd)
        let result: Result<[Frame], StreamErrorCode> = await withCheckedContinuation { continuation in
            loop.execute {
                guard let core = conn.value.client, !core.isClosed else {
                    return continuation.resume(returning: .failure(.sessionClosed))
                }
                core.fetch(request) { continuation.resume(returning: $0) }
            }
        }
        return try result.mapError { MoqError.from($0, broadcast: broadcast, track: track) }.get()
    }

    /// UDP payload bytes received from the peer so far (0 before the connection is up): what a
    /// player's adaptive bitrate measures its path with. Any thread.
    public var receivedBytes: UInt64 {
        quic.withLock { $0?.receivedBytesTotal } ?? webSocketCounts.withLock { $0?.received.load(ordering: .relaxed) }
            ?? 0
    }

    /// Receives the peer's bandwidth and RTT reports (PROBE; over MoQ Transport, which has none, the
    /// stream ends at once).
    public func probes() -> AsyncStream<Probe> {
        // Only the newest reports matter to a reader that fell behind.
        let (stream, continuation) = AsyncStream<Probe>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let conn = connection
        loop.execute {
            guard let core = conn.value.client, !core.isClosed else { return continuation.finish() }
            core.requestProbe(handler: { continuation.yield($0) }, finished: { continuation.finish() })
        }
        return stream
    }

    /// Throws when the session speaks MoQ Transport, which has no `feature` (moq-lite's).
    private func refuseOnIETF(_ feature: String) throws(MoqError) {
        guard isIETF else { return }
        throw .configuration(
            "\(feature) is moq-lite's: this session speaks IETF MoQ Transport (\(version)); connect with protocol moq-lite for it"
        )
    }

    // MARK: Lifetime

    /// Closes the session (code 0 by default).
    public func close(_ code: SessionErrorCode = .cancel, reason: String = "") {
        let conn = connection
        loop.execute { conn.value.client?.close(code, reason: reason) }
    }

    /// Waits until everything written has been acknowledged by the peer and every
    /// group we serve is complete, or `timeout` passes. Use before closing a publisher.
    public func drain(timeout: Duration = .seconds(5)) async {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let conn = connection
            let idle: Bool = await withCheckedContinuation { continuation in
                loop.execute {
                    guard let core = conn.value.client, !core.isClosed else {
                        return continuation.resume(returning: true)
                    }
                    // Over WebSocket, "queued" is what qmux and the socket still hold (TCP delivers the rest).
                    let queued =
                        conn.value.connection?.totalQueuedBytes ?? conn.value.qmuxLink.map {
                            $0.qmux.totalUnsentBytes + $0.tcp.queuedBytes
                        } ?? 0
                    continuation.resume(returning: queued == 0 && core.activeServedGroups == 0)
                }
            }
            if idle { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Why the session ended, or nil while it is open.
    public var closeReason: SessionCloseReason? { closeState.withLock { $0.reason } }

    /// The GOAWAY URI the peer sent, if any.
    public var goawayURI: String? { closeState.withLock { $0.goaway } }

    /// Waits for GOAWAY or the end of the session, whichever comes first (a GOAWAY that
    /// already arrived is returned at once).
    /// - Throws: `CancellationError` when the waiting task is cancelled first.
    public func lifecycleEvent() async throws(CancellationError) -> LifecycleEvent {
        try await waitCancellably(closeState, \.eventWaiters) { s in
            if let uri = s.goaway { return .goaway(uri) }
            return s.reason.map { .closed($0) }
        }
    }

    private func goawayArrived(_ uri: String) {
        let waiters = closeState.withLock { s -> [CheckedContinuation<LifecycleEvent?, Never>] in
            guard s.goaway == nil else { return [] }
            s.goaway = uri
            return s.eventWaiters.takeAll()
        }
        for w in waiters { w.resume(returning: .goaway(uri)) }
    }

    /// Waits for the session to end (at once if it has).
    /// - Throws: `CancellationError` when the waiting task is cancelled first, so a caller with a
    ///   deadline (a test, an app's shutdown) is never held by a session that stays open.
    public func closed() async throws(CancellationError) -> SessionCloseReason {
        try await waitCancellably(closeState, \.waiters) { $0.reason }
    }

    /// Statistics of the session and its connection.
    /// - Throws: `CancellationError` when the waiting task is cancelled before the network thread answered.
    public func stats() async throws(CancellationError) -> SessionStats {
        try await answer { stats($0) }
    }

    /// Statistics of the session and its connection, handed to `completion` on the session's loop
    /// thread; once closed, at once with the statistics it closed with. For callers that may not
    /// suspend (a relay's HTTP thread answering `/metrics`).
    public func stats(_ completion: @escaping @Sendable (SessionStats) -> Void) {
        if let final = finalStats { return completion(final) }
        let conn = connection
        let binding = self.binding
        let box = WeakReference(self)
        loop.execute {
            completion(box.value?.finalStats ?? Self.snapshot(conn.value, binding: binding))
        }
    }

    /// The statistics it closed with (nil while open).
    public var finalStats: SessionStats? { closeState.withLock { $0.final } }

    /// The counters now (loop thread).
    private static func snapshot(_ conn: SessionConnection, binding: SessionBinding) -> SessionStats {
        let counters = conn.client?.sessionCounters ?? SessionCounters()
        let q = conn.connection?.stats
        let rtt = q?.smoothedRTT.nanoseconds ?? conn.qmuxLink?.qmux.smoothedRTT ?? 0
        let ws = conn.qmuxLink?.counts
        return SessionStats(
            counters: counters, rttMicros: rtt / 1000,
            sendRateBps: q?.estimatedSendRate ?? 0, packetsLost: q?.packetsLost ?? 0,
            bytesSent: q?.bytesSent ?? ws?.sent.load(ordering: .relaxed) ?? 0,
            bytesReceived: q?.bytesReceived ?? ws?.received.load(ordering: .relaxed) ?? 0,
            packetsSent: q?.packetsSent ?? 0,
            packetsReceived: q?.packetsReceived ?? 0, receiveRateBps: q?.estimatedReceiveRate ?? 0, binding: binding)
    }

    /// Loop thread (the connection's close callback).
    private func didClose(_ reason: SessionCloseReason) {
        let final = Self.snapshot(connection.value, binding: binding)
        let (waiters, eventWaiters) = closeState.withLock {
            s -> ([CheckedContinuation<SessionCloseReason?, Never>], [CheckedContinuation<LifecycleEvent?, Never>]) in
            guard s.reason == nil else { return ([], []) }
            s.final = final
            s.reason = reason
            return (s.waiters.takeAll(), s.eventWaiters.takeAll())
        }
        for w in waiters { w.resume(returning: reason) }
        for w in eventWaiters { w.resume(returning: .closed(reason)) }
    }
}

/// Session and connection statistics.
public struct SessionStats: Sendable, Equatable {
    /// Session counters (groups, frames, bytes, resets…).
    public var counters: SessionCounters
    /// Smoothed RTT in µs.
    public var rttMicros: UInt64
    /// Estimated send rate in bit/s.
    public var sendRateBps: UInt64
    /// QUIC packets declared lost.
    public var packetsLost: UInt64
    /// Bytes sent on the connection.
    public var bytesSent: UInt64
    /// Bytes received on the connection.
    public var bytesReceived: UInt64
    /// UDP datagrams sent.
    public var packetsSent: UInt64 = 0
    /// UDP datagrams received.
    public var packetsReceived: UInt64 = 0
    /// Estimated receive rate in bit/s (what arrived over the last 100 ms or more).
    public var receiveRateBps: UInt64 = 0
    /// Raw QUIC or WebTransport.
    public var binding: SessionBinding = .quic
}

/// What a session runs over.
public enum SessionBinding: String, Sendable, Equatable, CustomStringConvertible {
    /// Raw QUIC, ALPN `moq-lite-06` (`moql://` URLs), or MoQ Transport's (`moqt-16`, `moq-00`).
    case quic = "QUIC"
    /// WebTransport over HTTP/3, ALPN `h3` (`https://` and `http://` URLs, browsers).
    case webTransport = "WebTransport"
    /// qmux over a WebSocket, subprotocol `qmux-01.moq-lite-06` (where UDP does not pass).
    case webSocket = "WebSocket"

    public var description: String { rawValue }
}

/// A subscription to a peer's track.
public final class RemoteTrack: @unchecked Sendable {
    /// The broadcast path.
    public let broadcast: String
    /// Where received groups are written; read it with ``consumer(maxLatencyMs:startAt:)``.
    public let track: TrackProducer
    let session: MoqSession
    /// Touched only on the session's loop thread.
    var handle: (any SubscriptionControl)?

    init(session: MoqSession, broadcast: String, track: TrackProducer) {
        self.session = session
        self.broadcast = broadcast
        self.track = track
    }

    /// A reader of the received groups (see ``TrackConsumer``).
    public func consumer(maxLatencyMs: UInt64? = nil, startAt: UInt64? = nil) -> TrackConsumer {
        TrackConsumer(
            track: track, startAt: startAt, maxLatencyMs: maxLatencyMs, timers: LoopScheduler(loop: session.loop))
    }

    /// Changes priority, latency budget or bounds (SUBSCRIBE_UPDATE).
    public func update(_ range: SubscriptionRange) {
        let box = LoopBound(self)
        session.loop.execute { box.value.handle?.update(range) }
    }

    /// Ends the subscription.
    public func cancel() {
        let box = LoopBound(self)
        session.loop.execute { box.value.handle?.cancel() }
    }

    /// Ends the subscription but leaves ``track`` open: a relay moving a track to another route
    /// feeds it from a new subscription, and its readers see no end.
    public func detach() {
        let box = LoopBound(self)
        session.loop.execute { box.value.handle?.detach() }
    }

    /// The error the track ended with, as an API error; nil while live or when finished.
    public var error: MoqError? {
        guard case .aborted(let code)? = track.end else { return nil }
        return MoqError.from(code, broadcast: broadcast, track: track.name)
    }
}

extension MoqError {
    /// The API error for a stream code answering a request about `broadcast`/`track`.
    static func from(_ code: StreamErrorCode, broadcast: String, track: String) -> MoqError {
        switch code {
        case .unroutable: .broadcastNotFound(BroadcastPath.normalize(broadcast))
        case .notFound: .trackNotFound(broadcast: BroadcastPath.normalize(broadcast), track: track)
        case .sessionClosed: .closed("the session closed")
        default: .request(code)
        }
    }
}

/// Cancels an announce request from a stream's termination handler (loop thread only).
final class CancelBox: @unchecked Sendable {
    private var handle: (any RequestCancelling)?
    private var cancelled = false

    func set(_ handle: any RequestCancelling) {
        if cancelled { handle.cancel() } else { self.handle = handle }
    }

    func run() {
        cancelled = true
        handle?.cancel()
        handle = nil
    }
}

/// One announce stream from two sources, the peer's announcements and the session's own
/// broadcasts: a path is active while either source has it, and ends when the last one drops it.
final class AnnounceMerge: @unchecked Sendable {
    private struct State {
        var local: Set<String> = []
        var remote: Set<String> = []
        var closed = false
        /// Local events that arrived before the snapshot was replayed (nil once it was).
        var early: [AnnounceEvent]? = []
    }
    private let state = Lock(State())
    private let continuation: AsyncStream<AnnounceEvent>.Continuation
    private let onOverflow: @Sendable () -> Void

    init(_ continuation: AsyncStream<AnnounceEvent>.Continuation, onOverflow: @escaping @Sendable () -> Void) {
        self.continuation = continuation
        self.onOverflow = onOverflow
    }

    /// An event about the session's own broadcasts (held until ``replayLocal(_:)``).
    func local(_ event: AnnounceEvent) {
        let held = state.withLock { s -> Bool in
            guard s.early != nil else { return false }
            s.early?.append(event)
            return true
        }
        if !held { apply(event, local: true) }
    }

    /// The session's own broadcasts when observing began, then the changes that came meanwhile.
    func replayLocal(_ snapshot: [AnnounceEvent]) {
        for event in snapshot { apply(event, local: true) }
        while true {
            let next = state.withLock { s -> [AnnounceEvent] in
                let pending = s.early ?? []
                s.early = pending.isEmpty ? nil : []
                return pending
            }
            if next.isEmpty { return }
            for event in next { apply(event, local: true) }
        }
    }

    /// An event from the peer.
    func remote(_ event: AnnounceEvent) { apply(event, local: false) }

    private func apply(_ event: AnnounceEvent, local: Bool) {
        // Decided and yielded under the lock, so the two sources' events keep their order; the
        // stream is finished outside it (finishing runs the reader's termination handler).
        let finish = state.withLock { s -> (finish: Bool, overflow: Bool) in
            guard !s.closed else { return (false, false) }
            switch event {
            case .active(let path, _):
                let known = s.local.contains(path) || s.remote.contains(path)
                if local { s.local.insert(path) } else { s.remote.insert(path) }
                // A route update from the peer for a path it announced still goes through.
                if known && local { return (false, false) }
            case .ended(let path):
                if local { s.local.remove(path) } else { s.remote.remove(path) }
                if s.local.contains(path) || s.remote.contains(path) { return (false, false) }
            case .closed:
                // The peer's announce stream ended: the stream ends with it.
                s.closed = true
                continuation.yield(event)
                return (true, false)
            }
            if case .dropped = continuation.yield(event) {
                s.closed = true
                return (true, true)
            }
            return (false, false)
        }
        if finish.overflow { onOverflow() }
        if finish.finish { continuation.finish() }
    }
}

// SPDX-License-Identifier: MIT
import MoqModel
import MoqQUIC
import MoqSession
import MoqSync
import MoqWire
public import MoqtSession
public import MoqtWire

/// A client session of IETF MoQ Transport (draft-14 over ALPN `moq-00`, draft-16 over `moqt-16`) on
/// raw QUIC: the other protocol family beside ``MoqSession``'s moq-lite, on the same model.
///
/// What it publishes comes from `origin` (a broadcast path `room/cam` is the namespace
/// `("room","cam")`, moq-dev's mapping), and what it subscribes to is written into
/// ``TrackProducer``s read as any other track. The client offers only the chosen version's ALPN:
/// moq-dev's servers prefer moq-lite when a client offers both families.
///
/// ``MoqSession`` speaks MoQ Transport too (``ClientOptions/moqProtocol``), and so do the GStreamer
/// elements; this is the lower-level client of one draft (raw QUIC). A server's IETF sessions are
/// of this type too, over raw QUIC or WebTransport. Not yet: WebSocket (docs/ietf/plan.md).
public final class IETFSession: @unchecked Sendable {  // the core and connection are touched on `loop` only
    let loop: QUICEventLoop
    let connection: any IETFEndpoint
    /// What the session publishes.
    public let origin: Origin
    /// The draft spoken.
    public let version: MoqtVersion
    /// Raw QUIC, or WebTransport (a session a server accepted over WebTransport).
    let binding: SessionBinding

    /// The statistics it closed with, recorded on the loop when it closed.
    private let final = Lock<SessionStats?>(nil)

    /// Made on `loop` (its close handler is registered there).
    init(loop: QUICEventLoop, connection: any IETFEndpoint, origin: Origin, version: MoqtVersion) {
        self.loop = loop
        self.connection = connection
        binding = connection.binding
        self.origin = origin
        self.version = version
        let box = WeakReference(self)
        _ = connection.addCloseHandler { [final] in
            final.withLock { $0 = box.value.map { Self.snapshot($0.connection) } }
        }
    }

    /// Statistics of the session and its connection (moq-lite's counters where MoQ Transport has
    /// the same), handed to `completion` on the session's loop; once closed, at once.
    public func stats(_ completion: @escaping @Sendable (SessionStats) -> Void) {
        if let final = finalStats { return completion(final) }
        let endpoint = LoopBound(connection)
        loop.execute { completion(Self.snapshot(endpoint.value)) }
    }

    /// MoQ Transport's own counters (updates, datagrams, fetches, refusals…), handed to `completion`
    /// on the session's loop; zero once the session's core is gone.
    public func moqtCounters(_ completion: @escaping @Sendable (MoqtCounters) -> Void) {
        let endpoint = LoopBound(connection)
        loop.execute { completion(endpoint.value.moqtCore?.counters ?? MoqtCounters()) }
    }

    /// The statistics it closed with (nil while open).
    public var finalStats: SessionStats? { final.withLock { $0 } }

    /// The figures now (loop thread).
    static func snapshot(_ endpoint: any IETFEndpoint) -> SessionStats {
        let q = endpoint.connection?.stats
        return SessionStats(
            counters: endpoint.moqtCore.map { IETFClientCore.counters($0) } ?? SessionCounters(),
            rttMicros: (q?.smoothedRTT.nanoseconds ?? 0) / 1000, sendRateBps: q?.estimatedSendRate ?? 0,
            packetsLost: q?.packetsLost ?? 0, bytesSent: q?.bytesSent ?? 0, bytesReceived: q?.bytesReceived ?? 0,
            packetsSent: q?.packetsSent ?? 0, packetsReceived: q?.packetsReceived ?? 0,
            receiveRateBps: q?.estimatedReceiveRate ?? 0, binding: endpoint.binding)
    }

    /// Connects to `url` (`moql://host:port/path`: raw QUIC; the path goes in SETUP's PATH) and
    /// completes SETUP on `version`.
    public static func connect(
        _ url: String, version: MoqtVersion, options: ClientOptions = ClientOptions(), origin: Origin = Origin()
    ) async throws(MoqError) -> IETFSession {
        let target = try MoqURL(url)
        guard !target.isWebTransport, !target.isWebSocket else {
            throw .invalidURL("\(url): IETF MoQ Transport runs on raw QUIC here (moql://); WebTransport comes later")
        }
        let tls = TLSClientConfiguration(verification: try options.tls.verification())
        var settings = QUICSettings()
        settings.alpn = [version.alpn]
        settings.automaticFlowControlCredit = false  // the core returns credit as it consumes
        settings.idleTimeout = options.idleTimeout
        settings.keepAliveInterval = options.keepAliveInterval
        settings.handshakeTimeout = options.connectTimeout
        let quicSettings = settings
        let loop = try SharedLoop.get()
        let peer = "\(target.host):\(target.port)"
        let config = MoqtSessionConfig(version: version, path: target.setupPath)
        let outcome = Lock<Result<IETFSession, MoqError>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let endpoint = IETFConnection(loop: loop, config: config, origin: origin, peerDescription: peer)
                let session = IETFSession(loop: loop, connection: endpoint, origin: origin, version: version)
                endpoint.onReady = { result in
                    outcome.withLock { $0 = result.map { session } }
                    continuation.resume()
                }
                endpoint.connection = QUICClient.connect(
                    host: target.host, port: target.port, tls: tls, settings: quicSettings, loop: loop,
                    delegate: endpoint)
                endpoint.startConnectTimer(options.connectTimeout)
            }
        }
        guard let result = outcome.withLock({ $0 }) else { throw .closed("the connection ended before it was set up") }
        return try result.get()
    }

    /// Publishes `broadcast` (it is advertised to the peer as its path's namespace).
    public func publish(_ broadcast: BroadcastProducer) { origin.publish(broadcast) }

    /// Subscribes to `track` of the broadcast at `broadcast`: its groups arrive in the returned
    /// subscription's track (which ends when the peer refuses or finishes it, it is cancelled, or
    /// the session closes).
    public func subscribe(
        broadcast: String, track: String, filter: SubscriptionFilter = .largestObject
    ) -> IETFRemoteTrack {
        let path = BroadcastPath.normalize(broadcast)
        let remote = IETFRemoteTrack(loop: loop, broadcast: path, track: TrackProducer(name: track))
        let endpoint = LoopBound(connection)
        let box = LoopBound(remote)
        loop.execute {
            guard let core = endpoint.value.moqtCore, !core.isClosed else {
                return box.value.track.abort(.sessionClosed)
            }
            box.value.started(core.subscribe(broadcast: path, track: track, into: box.value.track, filter: filter))
        }
        return remote
    }

    /// The broadcasts the peer publishes under `prefix`, as they come and go (ends with the session).
    public func announced(prefix: String = "") -> AsyncStream<MoqtNamespaceEvent> {
        let (stream, continuation) = AsyncStream<MoqtNamespaceEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let endpoint = LoopBound(connection)
        let loop = self.loop
        loop.execute {
            guard let core = endpoint.value.moqtCore, !core.isClosed else { return continuation.finish() }
            let handle = LoopBound(
                core.subscribeNamespace(prefix: BroadcastPath.normalize(prefix)) { event in
                    continuation.yield(event)
                    switch event {
                    case .refused, .ended: continuation.finish()
                    case .announced, .unannounced: break
                    }
                })
            let key = endpoint.value.addCloseHandler { continuation.finish() }
            // A reader that stops (a wait that found its broadcast, a task cancelled) ends the request,
            // so that its id returns to the peer's window.
            continuation.onTermination = { _ in
                loop.execute {
                    handle.value.cancel()
                    endpoint.value.removeCloseHandler(key)
                }
            }
        }
        return stream
    }

    /// Waits until the peer publishes `path` (or `timeout` passes: ``MoqError/broadcastNotFound(_:)``).
    public func waitForBroadcast(_ path: String, timeout: Duration = .seconds(10)) async throws(MoqError) {
        let target = BroadcastPath.normalize(path)
        let found = await withTaskGroup(of: Bool.self) { group -> Bool in
            group.addTask {
                for await event in self.announced(prefix: target) {
                    if case .announced(let p) = event, p == target { return true }
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
        if !found { throw .broadcastNotFound(target) }
    }

    /// Why the session ended, once it has (read on the session's thread).
    public var closeReason: MoqtCloseReason? {
        get async {
            let endpoint = LoopBound(connection)
            return await withCheckedContinuation { continuation in
                loop.execute { continuation.resume(returning: endpoint.value.moqtCore?.closeReason) }
            }
        }
    }

    /// GOAWAY: asks the peer to move to `uri` ("" for the same server) before this session closes
    /// (a server's; a client sends it with no URI).
    public func goaway(uri: String = "") {
        let endpoint = LoopBound(connection)
        loop.execute { endpoint.value.moqtCore?.sendGoaway(uri: uri) }
    }

    /// Closes the session (NO_ERROR unless `code` says otherwise).
    public func close(_ code: MoqtSessionError = .noError, reason: String = "") {
        let endpoint = LoopBound(connection)
        loop.execute { endpoint.value.moqtCore?.close(code, reason: reason) }
    }
}

/// The QUIC side of an ``IETFSession``: routes the connection's events into the core. Loop thread only.
final class IETFConnection: QUICConnectionDelegate, MoqtSessionDelegate {
    let loop: QUICEventLoop
    /// The session's settings; its version is the one the ALPN chose (see ``versions``).
    var config: MoqtSessionConfig
    /// The versions accepted; the negotiated ALPN picks one.
    let versions: [MoqtVersion]
    let origin: Origin
    let peerDescription: String
    var connection: QUICConnection?
    private(set) var core: MoqtSessionCore?
    var onReady: ((Result<Void, MoqError>) -> Void)?
    private var onClose: [UInt64: () -> Void] = [:]
    private var nextCloseHandler: UInt64 = 0
    private var connectTimer: QUICTimer?

    init(
        loop: QUICEventLoop, config: MoqtSessionConfig, versions: [MoqtVersion]? = nil, origin: Origin,
        peerDescription: String
    ) {
        self.loop = loop
        self.config = config
        self.versions = versions ?? [config.version]
        self.origin = origin
        self.peerDescription = peerDescription
    }

    func startConnectTimer(_ timeout: Duration) {
        let box = LoopBound(self)
        connectTimer = loop.schedule(after: timeout) {
            let me = box.value
            guard me.onReady != nil else { return }
            me.fail(.timeout("no MoQ Transport session with \(me.peerDescription) within \(timeout)"))
            me.connection?.close(code: MoqtSessionError.controlMessageTimeout.rawValue, reason: "connect timeout")
        }
    }

    func fail(_ error: MoqError) {
        connectTimer?.cancel()
        let ready = onReady
        onReady = nil
        ready?(.failure(error))
    }

    func quicConnectionDidConnect(_ connection: QUICConnection) {
        guard let alpn = connection.negotiatedALPN, let version = versions.first(where: { $0.alpn == alpn }) else {
            fail(
                .tls(
                    "\(peerDescription) did not agree on \(versions.map(\.alpn)) (ALPN \(connection.negotiatedALPN ?? "none"))"
                ))
            return connection.close(code: MoqtSessionError.versionNegotiationFailed.rawValue, reason: "ALPN")
        }
        config.version = version
        let core = MoqtSessionCore(
            config: config, transport: QUICSessionTransport(connection), scheduler: LoopScheduler(loop: loop),
            publishOrigin: origin)
        core.delegate = self
        self.core = core
        core.connected()
    }

    func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64) { core?.streamOpened(stream) }

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
        let text: String
        switch reason {
        case .application(let code, let why, let byPeer):
            text = "\(byPeer ? "closed by" : "closed with") \(peerDescription): code \(code) \(why)"
        case .tls(let why): text = "TLS handshake with \(peerDescription) failed: \(why)"
        case .alpn(let why): text = "\(peerDescription): \(why)"
        case .unreachable(let why): text = "cannot reach \(peerDescription): \(why)"
        case .handshakeTimeout: text = "no QUIC handshake with \(peerDescription)"
        case .idleTimeout: text = "the connection to \(peerDescription) went idle"
        case .transport(let code, let why, _): text = "QUIC error 0x\(String(code, radix: 16)): \(why)"
        }
        if onReady != nil {
            if case .tls = reason { fail(.tls(text)) } else { fail(.unreachable(text)) }
        }
        if case .application(let code, let why, true) = reason {
            core?.peerClosed(code: code, reason: why)  // the peer's termination code, as it sent it
        } else {
            core?.transportClosed(.transport(text))
        }
        closed()
    }

    // MARK: MoqtSessionDelegate

    func moqtSessionReady(_ session: MoqtSessionCore) {
        connectTimer?.cancel()
        let ready = onReady
        onReady = nil
        ready?(.success(()))
    }

    func moqtSession(_ session: MoqtSessionCore, goaway uri: String) {}

    func moqtSession(_ session: MoqtSessionCore, closed reason: MoqtCloseReason) {
        if onReady != nil { fail(.closed("session closed before setup: \(reason)")) }
        closed()
    }

    /// Runs `handler` when the session ends; returns a key to remove it.
    func addCloseHandler(_ handler: @escaping () -> Void) -> UInt64 {
        nextCloseHandler += 1
        onClose[nextCloseHandler] = handler
        return nextCloseHandler
    }

    func removeCloseHandler(_ key: UInt64) { onClose[key] = nil }

    private func closed() {
        let handlers = onClose.sorted { $0.key < $1.key }.map(\.value)
        onClose = [:]
        for handler in handlers { handler() }
    }
}

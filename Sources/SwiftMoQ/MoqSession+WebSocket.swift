// SPDX-License-Identifier: MIT
import MoqModel
import MoqQMux
import MoqQUIC
import MoqSession
import MoqSync

extension MoqSession {
    /// Relays (`host:port`) this process reached over WebSocket after QUIC lost the race: later
    /// connections to them start both at once (moq-dev's clients remember the same).
    static let webSocketWon = Lock<Set<String>>([])

    /// `http://` / `https://`: QUIC (WebTransport) first, WebSocket (`ws://` / `wss://`) `delay` later; the first session set up wins
    /// and the other is closed when it comes. Both failing reports QUIC's error, unless WebSocket's
    /// says the relay refused (a token), which retrying over QUIC would not change.
    static func connectRacing(
        _ target: MoqURL, delay: Duration, options: ClientOptions, origin: Origin,
        serving: (any BroadcastDirectory)?, answered: Lock<Bool>?
    ) async throws(MoqError) -> MoqSession {
        let relay = target.authority
        let head = webSocketWon.withLock { $0.contains(relay) } ? Duration.zero : delay
        let race = Lock<Race>(Race())
        // Each arm serves nothing until it has won: the loser is a session at the relay until it is
        // closed, and must not announce what the winner publishes (``GatedDirectory``).
        let quicGate = GatedDirectory(serving ?? origin)
        let webSocketGate = GatedDirectory(serving ?? origin)
        let result: Result<MoqSession, MoqError> = await withCheckedContinuation { continuation in
            race.withLock { $0.continuation = continuation }
            Task {
                do throws(MoqError) {
                    let session = try await connectOver(
                        target, options: options, origin: origin, serving: quicGate, answered: answered)
                    if Race.finish(race, .success(session), overWebSocket: false) { quicGate.open() }
                } catch {
                    Race.finish(race, .failure(error), overWebSocket: false)
                }
            }
            Task {
                if head > .zero { try? await Task.sleep(for: head) }
                if race.withLock({ $0.continuation == nil }) { return }
                do throws(MoqError) {
                    let session = try await connectWebSocket(
                        target.webSocketURL, options: options, origin: origin, serving: webSocketGate, answered: nil)
                    if Race.finish(race, .success(session), overWebSocket: true) {
                        webSocketGate.open()
                        _ = webSocketWon.withLock { $0.insert(relay) }
                    }
                } catch {
                    Race.finish(race, .failure(error), overWebSocket: true)
                }
            }
        }
        return try result.get()
    }

    /// One race between the two transports.
    struct Race {
        var continuation: CheckedContinuation<Result<MoqSession, MoqError>, Never>?
        var quicError: MoqError?
        var webSocketError: MoqError?

        /// Records one arm's outcome; true when it won.
        @discardableResult
        static func finish(_ race: Lock<Race>, _ outcome: Result<MoqSession, MoqError>, overWebSocket: Bool) -> Bool {
            let (continuation, value, won) = race.withLock {
                r -> (CheckedContinuation<Result<MoqSession, MoqError>, Never>?, Result<MoqSession, MoqError>?, Bool) in
                guard let c = r.continuation else { return (nil, nil, false) }
                switch outcome {
                case .success:
                    r.continuation = nil
                    return (c, outcome, true)
                case .failure(let error):
                    if overWebSocket { r.webSocketError = error } else { r.quicError = error }
                    guard let quic = r.quicError, let ws = r.webSocketError else { return (nil, nil, false) }
                    r.continuation = nil
                    if case .refused = ws { return (c, .failure(ws), false) }
                    return (c, .failure(quic), false)
                }
            }
            if let continuation, let value {
                continuation.resume(returning: value)
            } else if case .success(let late) = outcome {
                late.close()  // the other arm won meanwhile
            }
            return won
        }
    }

    /// `ws://` / `wss://`: TCP (and TLS), the WebSocket upgrade (`qmux-01.moq-lite-06`), then the
    /// session over qmux.
    static func connectWebSocket(
        _ target: MoqURL, options: ClientOptions, origin: Origin, serving: (any BroadcastDirectory)?,
        answered: Lock<Bool>?
    ) async throws(MoqError) -> MoqSession {
        var qmuxSettings = QMuxSettings()
        qmuxSettings.idleTimeoutMs = options.idleTimeout.nanoseconds / 1_000_000
        qmuxSettings.keepAliveMs = options.keepAliveInterval.nanoseconds / 1_000_000
        let settings = qmuxSettings
        let peer = "\(target.host):\(target.port)"
        // wss://: the server is verified as over QUIC (the same options: system CAs, roots, pins).
        let tls = target.isSecureWebSocket ? TLSClientConfiguration(verification: try options.tls.verification()) : nil
        // The path travels in the upgrade request, never in SETUP (moq-dev's rule for bindings with a URI).
        return try await establish(
            target, binding: .webSocket, setupPath: nil, options: options, origin: origin, serving: serving,
            answered: answered
        ) { endpoint in
            let box = LoopBound(endpoint)
            TCPStream.connect(host: target.host, port: target.port, loop: endpoint.loop) { result in
                let endpoint = box.value
                switch result {
                case .failure(let error):
                    endpoint.fail(.unreachable("cannot reach \(peer) over TCP (WebSocket): \(error)"))
                case .success(let tcp):
                    guard endpoint.onReady != nil else { return tcp.close(now: true) }  // timed out meanwhile
                    guard let tls else {
                        return WebSocketUpgrade(endpoint: endpoint, tcp: tcp, target: target, settings: settings)
                            .start()
                    }
                    startTLS(tcp, tls, endpoint: endpoint, target: target, settings: settings)
                }
            }
        }
    }
}

extension MoqSession {
    /// `wss://`: TLS on the connected socket, then the upgrade inside it.
    static func startTLS(
        _ tcp: TCPStream, _ tls: TLSClientConfiguration, endpoint: SessionConnection, target: MoqURL,
        settings: QMuxSettings
    ) {
        let stream: TLSStream
        do {
            stream = TLSStream(tcp: tcp, tls: try TLSRecordLayer(client: tls, host: target.host))
        } catch {
            tcp.close(now: true)
            return endpoint.fail(.tls("cannot set up TLS for \(target.redacted): \(error)"))
        }
        endpoint.pendingTCP = stream
        let box = LoopBound(endpoint)
        stream.onEstablished = { [unowned stream] error in
            let endpoint = box.value
            guard endpoint.onReady != nil else { return stream.close(now: true) }  // timed out meanwhile
            guard let error else {
                return WebSocketUpgrade(endpoint: endpoint, tcp: stream, target: target, settings: settings).start()
            }
            endpoint.pendingTCP = nil
            switch error {
            case .certificate(let refusal): endpoint.fail(.tls("\(target.redacted): \(refusal)"))
            default:
                endpoint.fail(
                    .tls("TLS handshake with \(endpoint.peerDescription) (\(target.redacted)) failed: \(error)"))
            }
        }
        stream.startHandshake()
    }
}

/// A client's WebSocket upgrade on a connected TCP (or TLS) stream; hands the stream to a ``QMuxLink``
/// once the server answered 101 with our subprotocol. Loop thread only.
final class WebSocketUpgrade: ByteStreamDelegate {
    let endpoint: SessionConnection
    let tcp: any ByteStream
    let target: MoqURL
    let settings: QMuxSettings
    private let key: String
    private var response: [UInt8] = []

    init(endpoint: SessionConnection, tcp: any ByteStream, target: MoqURL, settings: QMuxSettings) {
        self.endpoint = endpoint
        self.tcp = tcp
        self.target = target
        self.settings = settings
        var random = SystemRandomNumberGenerator()
        key = WebSocketHandshake.makeKey(using: &random)
    }

    func start() {
        endpoint.pendingTCP = tcp
        tcp.delegate = self
        tcp.write(WebSocketHandshake.request(host: target.authority, target: target.setupPath, key: key))
    }

    func byteStream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard endpoint.onReady != nil else { return tcp.close(now: true) }  // timed out meanwhile
        response.append(contentsOf: bytes)
        switch WebSocketHandshake.parseResponse(response) {
        case .incomplete: return
        case .invalid:
            endpoint.pendingTCP = nil
            tcp.close(now: true)
            endpoint.fail(.unreachable("\(endpoint.peerDescription) did not answer the WebSocket upgrade with HTTP"))
        case .complete(let status, let headers, let length):
            switch WebSocketHandshake.checkResponse(status: status, headers: headers, key: key) {
            case .failure(let refusal):
                endpoint.pendingTCP = nil
                tcp.close(now: true)
                // The server's words, if its body came with the head (bounded, one line).
                let said =
                    String(decoding: response[length...].prefix(200), as: UTF8.self)
                    .split(whereSeparator: \.isNewline).first.map { " (\($0))" } ?? ""
                let text = "WebSocket upgrade to \(target.redacted) refused: \(refusal)\(said)"
                endpoint.fail(
                    status == 401 || status == 403
                        ? .refused(code: SessionErrorCode.unauthorized.rawValue, reason: text) : .unreachable(text))
            case .success:
                endpoint.pendingTCP = nil
                let link = QMuxLink(endpoint: endpoint, tcp: tcp, isClient: true, settings: settings)
                endpoint.qmuxLink = link
                link.start(leftover: Array(response[length...]))
            }
        }
    }

    func byteStreamCanWrite(_ stream: any ByteStream) {}

    func byteStream(_ stream: any ByteStream, didEnd error: String?) {
        endpoint.pendingTCP = nil
        endpoint.fail(
            .unreachable(
                "\(endpoint.peerDescription) closed the connection during the WebSocket upgrade\(error.map { ": \($0)" } ?? "")"
            ))
    }
}

// SPDX-License-Identifier: MIT
import MoqSync

/// Keeps a session to a relay open: connects, and after a loss reconnects with
/// capped backoff (0.5, 1, 1… s, each with random jitter so that the clients of a
/// restarted relay do not all come back at once), each attempt given at most
/// ``reconnectAttemptTimeout``, until stopped or until an error that retrying cannot fix
/// (authentication, configuration, TLS). So a client is back within about 2 s of the
/// path or the relay returning, however long it was gone (`docs/reliability.md`).
///
/// GOAWAY is followed make-before-break: a new session is opened (to the URI the relay
/// gave, or the same URL) and handed over while the old one still works, and only then
/// is the old one closed.
///
/// The GStreamer elements and the Player/Publisher API build on it; each new session
/// is handed to `onSession` so the owner can publish and subscribe again.
public final class ReconnectingSession: @unchecked Sendable {
    /// Where the connection stands.
    public enum Status: Int32, Sendable, CustomStringConvertible {
        case disconnected = 0
        case connecting = 1
        case connected = 2
        case reconnecting = 3
        case failed = 4

        public var description: String {
            switch self {
            case .disconnected: "disconnected"
            case .connecting: "connecting"
            case .connected: "connected"
            case .reconnecting: "reconnecting"
            case .failed: "failed"
            }
        }
    }

    /// How a session came up.
    public enum SessionStart: Sendable, Equatable {
        /// The first session of this connection.
        case first
        /// After the previous session was lost (the relay or the network went away).
        case reconnect
        /// The successor after GOAWAY: the previous session is still open (it is closed right
        /// after this callback), so the relay's state and the publishers' timelines go on.
        case handover
    }

    /// Callbacks, all on an arbitrary (non-main) thread.
    public struct Handlers: Sendable {
        public var status: @Sendable (Status) -> Void = { _ in }
        /// A connection attempt or an open session failed; retrying follows. Reported for the
        /// first failure after a session (or the first attempt), then at most once per
        /// ``transientReportInterval`` while attempts keep failing: attempts come every second
        /// or two, and a warning each time would bury the one that matters.
        public var transientError: @Sendable (MoqError) -> Void = { _ in }
        /// Retrying cannot help; the status is now `failed`.
        public var fatalError: @Sendable (MoqError) -> Void = { _ in }
        /// A session is up (first connect, a reconnect, or the successor after GOAWAY).
        public var session: @Sendable (MoqSession, SessionStart) -> Void = { _, _ in }
        /// GOAWAY arrived (the URI the relay named, or empty); a new session follows.
        public var goaway: @Sendable (String) -> Void = { _ in }
        public init() {}
    }

    /// The relay.
    public let url: MoqURL
    /// Connection options.
    public let options: ClientOptions
    private let handlers: Handlers
    private let state = Lock<
        (status: Status, session: MoqSession?, reconnects: Int, handovers: Int, task: Task<Void, Never>?)
    >((.disconnected, nil, 0, 0, nil))

    /// The backoff delays, in order; the last repeats. Each wait is drawn from the upper half
    /// of its delay (``jittered(_:)``). Short on purpose: an attempt costs the relay one
    /// Initial (answered with a stateless Retry under load), and a long cap is what kept
    /// clients away for 6 s after a 30 s outage (1, 2, 4, 5 s before).
    public static let backoff: [Duration] = [.milliseconds(500), .seconds(1)]

    /// How long one *re*connect attempt may take (the first connect uses the options'
    /// `connectTimeout`). An attempt started while the path was down has its handshake
    /// retransmissions backed off; a fresh attempt soon after the path returns beats them.
    public static let reconnectAttemptTimeout: Duration = .seconds(2)

    /// While attempts keep failing, ``Handlers/transientError`` is reported at most this often.
    public static let transientReportInterval: Duration = .seconds(10)

    /// Whether a lost session is reconnected (true) or ends the connection as failed (the CLI's
    /// one-shot commands); GOAWAY is followed either way.
    public let retryAfterLoss: Bool

    public init(url: MoqURL, options: ClientOptions, handlers: Handlers, retryAfterLoss: Bool = true) {
        self.url = url
        self.options = options
        self.handlers = handlers
        self.retryAfterLoss = retryAfterLoss
    }

    /// A wait of between half and all of `delay` ("equal jitter"): reconnecting clients spread out.
    public static func jittered(_ delay: Duration) -> Duration {
        delay * Double.random(in: 0.5...1.0)
    }

    /// Sessions handed over after GOAWAY so far.
    public var handovers: Int { state.withLock { $0.handovers } }

    /// The current status.
    public var status: Status { state.withLock { $0.status } }
    /// The open session, if any.
    public var session: MoqSession? { state.withLock { $0.session } }
    /// Successful reconnections so far.
    public var reconnects: Int { state.withLock { $0.reconnects } }

    /// Starts connecting (once).
    public func start() {
        let task = Task<Void, Never> { [weak self] in await self?.run() }
        let old = state.withLock { s -> Task<Void, Never>? in
            let old = s.task
            s.task = task
            return old
        }
        old?.cancel()
    }

    /// Stops: closes the session and cancels any pending reconnect.
    public func stop() {
        let (task, session) = state.withLock { s -> (Task<Void, Never>?, MoqSession?) in
            let r = (s.task, s.session)
            s.task = nil
            s.session = nil
            return r
        }
        task?.cancel()
        session?.close()
        set(.disconnected)
    }

    private func set(_ status: Status) {
        let changed = state.withLock { s -> Bool in
            guard s.status != status else { return false }
            s.status = status
            return true
        }
        if changed { handlers.status(status) }
    }

    private func run() async {
        var attempt = 0
        var everConnected = false
        var lastReport: ContinuousClock.Instant?
        func report(_ error: MoqError) {
            let now = ContinuousClock.now
            if let last = lastReport, now - last < Self.transientReportInterval { return }
            lastReport = now
            handlers.transientError(error)
        }
        set(.connecting)
        while !Task.isCancelled {
            do {
                var attemptOptions = options
                if everConnected {
                    attemptOptions.connectTimeout = min(options.connectTimeout, Self.reconnectAttemptTimeout)
                }
                var session = try await MoqSession.connect(url, options: attemptOptions)
                if Task.isCancelled {
                    session.close()
                    return
                }
                attempt = 0
                lastReport = nil
                state.withLock {
                    $0.session = session
                    if everConnected { $0.reconnects += 1 }
                }
                let start: SessionStart = everConnected ? .reconnect : .first
                everConnected = true
                set(.connected)
                handlers.session(session, start)
                // Live until the session ends; GOAWAY hands over to a successor on the way.
                var reason: SessionCloseReason
                while true {
                    let event = await withTaskCancellationHandler {
                        await session.lifecycleEvent()
                    } onCancel: { [session] in
                        session.close()
                    }
                    if Task.isCancelled { return }
                    guard case .goaway(let uri) = event else {
                        if case .closed(let r) = event { reason = r } else { reason = .transport("closed") }
                        break
                    }
                    handlers.goaway(uri)
                    guard let next = await successor(of: session, goawayURI: uri) else {
                        // No successor: keep the old session until it ends, then reconnect.
                        reason = await session.closed()
                        break
                    }
                    state.withLock {
                        $0.session = next
                        $0.handovers += 1
                    }
                    handlers.session(next, .handover)
                    session.close()  // after the successor took over
                    session = next
                }
                state.withLock { if $0.session === session { $0.session = nil } }
                if Task.isCancelled { return }
                if case .remote(let code, let text) = reason, code == .unauthorized {
                    set(.failed)
                    handlers.fatalError(.refused(code: code.rawValue, reason: text))
                    return
                }
                guard retryAfterLoss else {
                    if reason.isGraceful {
                        set(.disconnected)
                    } else {
                        set(.failed)
                        handlers.fatalError(.closed("the session with \(url.redacted) ended: \(reason)"))
                    }
                    return
                }
                report(.closed("the session with \(url.redacted) ended: \(reason)"))
            } catch {
                if Task.isCancelled { return }
                if error.isFatal || !retryAfterLoss {
                    set(.failed)
                    handlers.fatalError(error)
                    return
                }
                report(error)
            }
            set(everConnected ? .reconnecting : .connecting)
            let delay = Self.jittered(Self.backoff[min(attempt, Self.backoff.count - 1)])
            attempt += 1
            try? await Task.sleep(for: delay)
        }
    }

    /// The session that replaces one told to go away: to the URI GOAWAY named when it is a
    /// moq URL, otherwise (an empty URI, as a relay shutting down sends) to the same URL.
    /// nil when it cannot be opened (the old one is then kept until it ends).
    private func successor(of old: MoqSession, goawayURI: String) async -> MoqSession? {
        let target = (try? MoqURL(goawayURI)) ?? url
        do {
            let next = try await MoqSession.connect(target, options: options)
            if Task.isCancelled {
                next.close()
                return nil
            }
            return next
        } catch {
            handlers.transientError(error)
            return nil
        }
    }
}

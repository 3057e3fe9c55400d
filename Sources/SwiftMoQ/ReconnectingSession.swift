// SPDX-License-Identifier: MIT
import MoqBase
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
/// is handed to `onSession` so the owner can publish and subscribe again. Several owners may
/// share one connection (``addListener(_:)``): MoqKit's Session, its Players and Publishers
/// use one QUIC connection per relay.
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
    private struct State {
        var status = Status.disconnected
        var session: MoqSession?
        var reconnects = 0
        var handovers = 0
        var task: Task<Void, Never>?
        /// Who hears the connection's events, in the order they were added; id 0 is the owner's.
        var listeners: [(id: UInt64, handlers: Handlers)] = []
        var nextListener: UInt64 = 1
    }
    private let state = Lock(State())

    /// Every listener's handlers at once (a snapshot: taken under the same lock as the change it reports).
    private static func fanout(_ listeners: [(id: UInt64, handlers: Handlers)]) -> Handlers {
        let all = listeners.map(\.handlers)
        var h = Handlers()
        h.status = { status in for l in all { l.status(status) } }
        h.transientError = { error in for l in all { l.transientError(error) } }
        h.fatalError = { error in for l in all { l.fatalError(error) } }
        h.session = { session, start in for l in all { l.session(session, start) } }
        h.goaway = { uri in for l in all { l.goaway(uri) } }
        return h
    }

    /// The current listeners' handlers.
    private var handlers: Handlers { Self.fanout(state.withLock { $0.listeners }) }

    /// The backoff delays, in order; the last repeats. Each wait is drawn from the upper half
    /// of its delay (``jittered(_:)``). Short on purpose: an attempt costs the relay one
    /// Initial (answered with a stateless Retry under load), and a long cap is what kept
    /// clients away for 6 s after a 30 s outage (1, 2, 4, 5 s before).
    public static let backoff: [Duration] = [.milliseconds(500), .seconds(1)]

    /// How long an attempt may take: 2 s, doubled after each attempt that timed out although the
    /// peer answered (4, 8 s…, up to the options' `connectTimeout`). An attempt whose Initial or
    /// handshake packets were lost has its retransmissions backed off (1, 2, 4 s…); a fresh
    /// attempt soon after the path returns, or through handshake loss, beats them. Doubling for a
    /// peer that answers keeps paths whose handshake takes longer (a round trip of a second) reachable.
    public static let reconnectAttemptTimeout: Duration = .seconds(2)

    /// While attempts keep failing, ``Handlers/transientError`` is reported at most this often.
    public static let transientReportInterval: Duration = .seconds(10)

    /// Whether a lost session is reconnected (true) or ends the connection as failed (the CLI's
    /// one-shot commands); GOAWAY is followed either way.
    public let retryAfterLoss: Bool

    public init(url: MoqURL, options: ClientOptions, handlers: Handlers, retryAfterLoss: Bool = true) {
        self.url = url
        self.options = options
        state.withLock { $0.listeners = [(0, handlers)] }
        self.retryAfterLoss = retryAfterLoss
    }

    /// Adds another owner's callbacks to a connection someone else started and stops (an element
    /// or a player sharing it). The listener hears the current status at once and, when a session
    /// is up, that session (as ``SessionStart/first``); then every event like the owner, exactly
    /// once each. Returns the token for ``removeListener(_:)``.
    public func addListener(_ listener: Handlers) -> UInt64 {
        let (id, status, session) = state.withLock { s -> (UInt64, Status, MoqSession?) in
            let id = s.nextListener
            s.nextListener += 1
            s.listeners.append((id, listener))
            return (id, s.status, s.session)
        }
        listener.status(status)
        if let session { listener.session(session, .first) }
        return id
    }

    /// Stops calling a listener added with ``addListener(_:)`` (an event already being delivered
    /// may still reach it).
    public func removeListener(_ id: UInt64) {
        state.withLock { $0.listeners.removeAll { $0.id == id } }
    }

    /// The jitter's generator: seeded from the system's, with state of its own. (The system's
    /// generator is an empty value: every `inout` use of one, on any thread, is the same
    /// address, which ThreadSanitizer reports as a race between sessions reconnecting at once.)
    static func generator() -> SeededGenerator {
        SeededGenerator(seed: UInt64.random(in: .min ... .max))
    }

    /// A wait of between half and all of `delay` ("equal jitter"): reconnecting clients spread out.
    public static func jittered(_ delay: Duration) -> Duration {
        var random = Self.generator()
        return ReconnectPolicy.jittered(delay, using: &random)
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
        let listeners = state.withLock { s -> [(id: UInt64, handlers: Handlers)]? in
            guard s.status != status else { return nil }
            s.status = status
            return s.listeners
        }
        if let listeners { Self.fanout(listeners).status(status) }
    }

    /// Connects and reconnects as ``ReconnectPolicy`` decides, until stopped or failed.
    private func run() async {
        var policy = ReconnectPolicy(
            connectTimeout: options.connectTimeout, retryAfterLoss: retryAfterLoss, relay: url.redacted)
        var random = Self.generator()
        let started = ContinuousClock.now
        func elapsed() -> Duration { .now - started }
        set(policy.status)
        while !Task.isCancelled {
            var attemptOptions = options
            attemptOptions.connectTimeout = policy.nextAttempt(now: elapsed())
            let answered = Lock(false)
            let next: ReconnectPolicy.Next
            do throws(MoqError) {
                let session = try await MoqSession.connect(url, options: attemptOptions, answered: answered)
                if Task.isCancelled {
                    session.close()
                    return
                }
                announce(session, policy.connected())
                guard let reason = await follow(session), !Task.isCancelled else { return }
                next = policy.sessionEnded(reason, now: elapsed(), using: &random)
            } catch {
                if Task.isCancelled { return }
                next = policy.failed(error, answered: answered.withLock { $0 }, now: elapsed(), using: &random)
            }
            if case .retry(_, let report?) = next { handlers.transientError(report) }
            set(policy.status)
            switch next {
            case .retry(let delay, _): try? await Task.sleep(for: delay)
            case .fail(let error):
                handlers.fatalError(error)
                return
            case .disconnect: return
            }
        }
    }

    /// Makes `session` the open one and hands it to the listeners.
    private func announce(_ session: MoqSession, _ start: SessionStart) {
        // The session and the listeners it is announced to are taken together: a listener
        // added at the same time hears of it exactly once (here, or from addListener).
        let listeners = state.withLock {
            $0.session = session
            if start == .reconnect { $0.reconnects += 1 }
            return $0.listeners
        }
        set(.connected)
        Self.fanout(listeners).session(session, start)
    }

    /// Lives with a session until it ends, handing over to a successor at each GOAWAY on the way.
    /// Returns why the last one ended, or nil when stopped meanwhile.
    private func follow(_ first: MoqSession) async -> SessionCloseReason? {
        var session = first
        var reason: SessionCloseReason?
        while reason == nil {
            let event: MoqSession.LifecycleEvent
            do {
                event = try await withTaskCancellationHandler {
                    try await session.lifecycleEvent()
                } onCancel: { [session] in
                    session.close()
                }
            } catch {
                return nil
            }
            if Task.isCancelled { return nil }
            switch event {
            case .closed(let why):
                reason = why
            case .goaway(let uri):
                handlers.goaway(uri)
                guard let next = await successor(of: session, goawayURI: uri) else {
                    // No successor: keep the old session until it ends, then reconnect.
                    guard let why = try? await session.closed() else { return nil }  // stopped
                    reason = why
                    break
                }
                let listeners = state.withLock {
                    $0.session = next
                    $0.handovers += 1
                    return $0.listeners
                }
                Self.fanout(listeners).session(next, .handover)
                session.close()  // after the successor took over
                session = next
            }
        }
        state.withLock { if $0.session === session { $0.session = nil } }
        return reason
    }

    /// The session that replaces one told to go away: to the URI GOAWAY named when it is a
    /// moq URL, otherwise (an empty URI, as a relay shutting down sends) to the same URL.
    /// nil when it cannot be opened (the old one is then kept until it ends).
    private func successor(of old: MoqSession, goawayURI: String) async -> MoqSession? {
        let target = (try? MoqURL(goawayURI)) ?? url
        var attemptOptions = options
        attemptOptions.connectTimeout = ReconnectPolicy.handoverTimeout(connectTimeout: options.connectTimeout)
        do {
            let next = try await MoqSession.connect(target, options: attemptOptions)
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

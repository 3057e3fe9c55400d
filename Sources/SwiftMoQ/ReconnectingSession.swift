// SPDX-License-Identifier: MIT
import Synchronization

/// Keeps a session to a relay open: connects, and after a loss reconnects with
/// capped backoff (1, 2, 4, 5, 5… s), until stopped or until an error that retrying
/// cannot fix (authentication, configuration, TLS).
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

    /// Callbacks, all on an arbitrary (non-main) thread.
    public struct Handlers: Sendable {
        public var status: @Sendable (Status) -> Void = { _ in }
        /// A connection attempt or an open session failed; retrying follows.
        public var transientError: @Sendable (MoqError) -> Void = { _ in }
        /// Retrying cannot help; the status is now `failed`.
        public var fatalError: @Sendable (MoqError) -> Void = { _ in }
        /// A session is up (first connect or a reconnect).
        public var session: @Sendable (MoqSession) -> Void = { _ in }
        public init() {}
    }

    /// The relay.
    public let url: MoqURL
    /// Connection options.
    public let options: ClientOptions
    private let handlers: Handlers
    private let state = Mutex<(status: Status, session: MoqSession?, reconnects: Int, task: Task<Void, Never>?)>(
        (.disconnected, nil, 0, nil))

    /// The backoff delays, in order; the last repeats.
    public static let backoff: [Duration] = [.seconds(1), .seconds(2), .seconds(4), .seconds(5)]

    public init(url: MoqURL, options: ClientOptions, handlers: Handlers) {
        self.url = url
        self.options = options
        self.handlers = handlers
    }

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
        set(.connecting)
        while !Task.isCancelled {
            do {
                let session = try await MoqSession.connect(url, options: options)
                if Task.isCancelled {
                    session.close()
                    return
                }
                attempt = 0
                state.withLock {
                    $0.session = session
                    if everConnected { $0.reconnects += 1 }
                }
                everConnected = true
                set(.connected)
                handlers.session(session)
                let reason = await withTaskCancellationHandler {
                    await session.closed()
                } onCancel: {
                    session.close()
                }
                state.withLock { if $0.session === session { $0.session = nil } }
                if Task.isCancelled { return }
                if case .remote(let code, let text) = reason, code == .unauthorized {
                    set(.failed)
                    handlers.fatalError(.refused(code: code.rawValue, reason: text))
                    return
                }
                handlers.transientError(.closed("the session with \(url.redacted) ended: \(reason)"))
            } catch {
                if Task.isCancelled { return }
                if error.isFatal {
                    set(.failed)
                    handlers.fatalError(error)
                    return
                }
                handlers.transientError(error)
            }
            set(everConnected ? .reconnecting : .connecting)
            let delay = Self.backoff[min(attempt, Self.backoff.count - 1)]
            attempt += 1
            try? await Task.sleep(for: delay)
        }
    }
}

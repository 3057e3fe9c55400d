// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqSync
import SwiftMoQ
import Synchronization

/// What moqsrc and moqsink share about their link to a relay: opening a reconnecting session from
/// the connection properties (with what to fix when they are wrong), the TLS warning, the handlers
/// that report retries and failures on the bus, the `status` property and its notification, the
/// negotiated version, and the latest session statistics. Each element owns one.
final class ElementConnection: @unchecked Sendable {
    /// Which way media flows: it words the messages and picks the resource error code.
    enum Role {
        case publisher, player

        var retryWarning: String {
            self == .publisher ? "cannot publish to the relay, retrying" : "cannot play from the relay, retrying"
        }
        var openError: GstResourceError {
            self == .publisher ? GST_RESOURCE_ERROR_OPEN_WRITE : GST_RESOURCE_ERROR_OPEN_READ
        }
    }

    private let element: UnsafeMutablePointer<GstElement>
    private let reporter: ElementReporter
    private let role: Role
    private let statusSpec: UnsafeMutablePointer<GParamSpec>?
    private let statusValue = Atomic<Int32>(ReconnectingSession.Status.disconnected.rawValue)
    private let stats = Lock<SessionStats?>(nil)
    /// Sessions that came up (`sessions`).
    private let sessionCount = Atomic<UInt64>(0)
    /// The connection a `swiftmoq.connection` context handed the element, if any.
    private let shared = Lock<ReconnectingSession?>(nil)
    /// Why the last attempt to connect failed (the retry WARNING's text), until a session comes up.
    private let lastRetry = Lock<String?>(nil)

    /// Why the last attempt to connect failed, if none succeeded since.
    var lastRetryError: String? { lastRetry.withLock { $0 } }

    /// The connection an element runs on between READY→PAUSED and PAUSED→READY: its own (started
    /// and stopped with it), or a shared one it only listens to.
    final class Use: Sendable {
        let connection: ReconnectingSession
        fileprivate let handlers: ReconnectingSession.Handlers
        fileprivate let isShared: Bool
        fileprivate let token = Lock<UInt64?>(nil)

        fileprivate init(connection: ReconnectingSession, handlers: ReconnectingSession.Handlers, isShared: Bool) {
            self.connection = connection
            self.handlers = handlers
            self.isShared = isShared
        }
    }

    /// - Parameter statusSpec: the element class's `status` spec (notified when the status changes).
    init(reporter: ElementReporter, role: Role, statusSpec: UnsafeMutablePointer<GParamSpec>?) {
        self.element = reporter.element
        self.reporter = reporter
        self.role = role
        self.statusSpec = statusSpec
    }

    /// The connection status.
    var status: ReconnectingSession.Status {
        ReconnectingSession.Status(rawValue: statusValue.load(ordering: .relaxed)) ?? .disconnected
    }

    /// The negotiated protocol while connected (`moq-version`).
    var negotiatedVersion: String? { status == .connected ? version.withLock { $0 } : nil }
    /// The protocol the last session that came up speaks.
    private let version = Lock<String?>(nil)

    /// The session statistics last collected by ``refreshStats(_:)``.
    var lastStats: SessionStats? { stats.withLock { $0 } }

    /// ``lastStats`` while connected: the connection figures (`connection-stats`, the estimated
    /// rates) read as zeros when there is no connection.
    var connectedStats: SessionStats? { status == .connected ? lastStats : nil }

    /// Writes the `status` property.
    func getStatus(into value: UnsafeMutablePointer<GValue>) {
        g_value_set_enum(value, statusValue.load(ordering: .relaxed))
    }

    /// Takes the shared connection a `swiftmoq.connection` context names (the element's
    /// `set_context`); false for other contexts.
    func adopt(_ context: OpaquePointer) -> Bool {
        guard let connection = SharedConnection.connection(in: context) else { return false }
        shared.withLock { $0 = connection }
        reporter.log(GST_LEVEL_INFO, "sharing the application's connection to \(connection.url.redacted)")
        return true
    }

    /// The relay and client options the connection properties name (a shared connection's when the
    /// `url` property is unset); nil after posting an ERROR that says what to fix.
    func resolve(_ settings: ConnectionSettings) -> (url: MoqURL, options: ClientOptions)? {
        if settings.url?.isEmpty ?? true, let connection = shared.withLock({ $0 }) {
            return (connection.url, connection.options)
        }
        switch settings.resolve() {
        case .failure(let e):
            reporter.error(.resource(GST_RESOURCE_ERROR_SETTINGS), e.description)
            return nil
        case .success(let r): return r
        }
    }

    /// The connection to `target` (from ``resolve(_:)``), not started yet: the shared one when it
    /// goes to the same relay, else a new one. A disabled certificate check is warned about.
    ///
    /// - Parameter session: called for every session that comes up (first connect, reconnects and
    ///   handovers), on a network task.
    func open(
        _ target: (url: MoqURL, options: ClientOptions),
        session: @escaping @Sendable (MoqSession, ReconnectingSession.SessionStart) -> Void
    ) -> Use {
        if target.options.tls.disableVerify {
            reporter.warning(
                .resource(GST_RESOURCE_ERROR_SETTINGS),
                "TLS certificate verification is disabled (tls-disable-verify): the relay is not authenticated")
        }
        let weakSelf = WeakReference(self)
        let role = self.role
        var handlers = ReconnectingSession.Handlers()
        handlers.status = { status in weakSelf.value?.statusChanged(status) }
        handlers.transientError = { error in
            weakSelf.value?.lastRetry.withLock { $0 = "\(error)" }
            weakSelf.value?.reporter.warning(.resource(role.openError), "\(role.retryWarning): \(error)")
        }
        handlers.fatalError = { error in
            weakSelf.value?.reporter.error(
                .resource(error.isAuthentication ? GST_RESOURCE_ERROR_NOT_AUTHORIZED : role.openError),
                Self.elementWording(error.description))
        }
        handlers.session = { [lastRetry, version] up, start in
            lastRetry.withLock { $0 = nil }
            version.withLock { $0 = up.version }
            weakSelf.value?.sessionCount.add(1, ordering: .relaxed)
            session(up, start)
        }
        if let connection = shared.withLock({ $0 }), connection.url == target.url {
            return Use(connection: connection, handlers: handlers, isShared: true)
        }
        let connection = ReconnectingSession(url: target.url, options: target.options, handlers: handlers)
        return Use(connection: connection, handlers: handlers, isShared: false)
    }

    /// An error's advice in the element's terms: the TLS layer words how to pin a certificate with
    /// the command line's flags, which a pipeline sets as the element's properties.
    static func elementWording(_ text: String) -> String {
        text.replacing("pin it with --tls-fingerprint ", with: "set the element's tls-fingerprint=")
            .replacing("or use --tls-root-file with its CA", with: "or tls-root-file=<a file with its CA>")
    }

    /// Starts the element's own connection, or starts listening to the shared one (which may be
    /// connected already: its session is handed over at once).
    func start(_ use: Use) {
        if use.isShared {
            let token = use.connection.addListener(use.handlers)
            use.token.withLock { $0 = token }
        } else {
            use.connection.start()
        }
    }

    /// Stops the element's own connection, or stops listening to the shared one (left open for its owner).
    func stop(_ use: Use) {
        if use.isShared {
            if let token = use.token.withLock({ t -> UInt64? in
                defer { t = nil }; return t
            }) {
                use.connection.removeListener(token)
            }
            statusChanged(.disconnected)
        } else {
            use.connection.stop()
        }
    }

    /// Sessions established since the element was created (`sessions`).
    var sessions: UInt64 { sessionCount.load(ordering: .relaxed) }

    /// Collects the current session's statistics (kept for the `stats` and `connection-stats`
    /// properties); `estimated-send-rate` and `estimated-recv-rate` are notified when they change.
    func refreshStats(_ connection: ReconnectingSession) async {
        guard let session = connection.session else { return }
        guard let latest = try? await session.stats() else { return }
        let previous = stats.withLock { s -> SessionStats? in
            defer { s = latest }
            return s
        }
        let object = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self)
        if previous?.sendRateBps != latest.sendRateBps {
            g_object_notify(object, StatusProperty.estimatedSendRate.name)
        }
        if previous?.receiveRateBps != latest.receiveRateBps {
            g_object_notify(object, StatusProperty.estimatedRecvRate.name)
        }
    }

    /// The `connection-stats` structure: the current connection's figures (zeros while disconnected).
    func connectionStats() -> UnsafeMutablePointer<GstStructure> {
        let s = connectedStats
        return makeStructure(
            "connection-stats",
            [
                ("rtt-us", .uint64(s?.rttMicros ?? 0)),
                ("rate-bps", .uint64(s?.sendRateBps ?? 0)),
                ("recv-rate-bps", .uint64(s?.receiveRateBps ?? 0)),
                ("bytes-sent", .uint64(s?.bytesSent ?? 0)),
                ("bytes-received", .uint64(s?.bytesReceived ?? 0)),
                ("packets-sent", .uint64(s?.packetsSent ?? 0)),
                ("packets-received", .uint64(s?.packetsReceived ?? 0)),
                ("packets-lost", .uint64(s?.packetsLost ?? 0)),
            ])
    }

    private func statusChanged(_ new: ReconnectingSession.Status) {
        statusValue.store(new.rawValue, ordering: .relaxed)
        if let spec = statusSpec {
            g_object_notify_by_pspec(UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self), spec)
        }
        reporter.log(GST_LEVEL_INFO, "status: \(new)")
    }
}

extension MoqError {
    /// True for refusals of the credentials (the ERROR is NOT_AUTHORIZED).
    var isAuthentication: Bool {
        if case .refused(let code, _) = self { return code == SessionErrorCode.unauthorized.rawValue }
        return false
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import SwiftMoQ
import Synchronization

/// A connection to a relay in moq-kit's shape: connect once, watch ``state``, discover
/// broadcasts with ``subscribe(prefix:)``, publish with ``publish(path:publisher:)``.
///
/// Differences from moq-kit (Linux, GStreamer):
/// - The session reconnects after a loss (``SessionOptions/reconnect``); subscriptions
///   continue on the new connection and re-announced broadcasts are yielded again.
/// - ``Player`` and ``Publisher`` run GStreamer pipelines (`moqsrc`, `moqsink`) on the session's
///   own connection (handed to the elements as a `swiftmoq.connection` GstContext): one QUIC
///   connection per relay, whatever plays and publishes through it.
public actor Session {
    /// The relay URL (`moql://host:port/root`).
    public nonisolated let url: String
    /// The options every connection made for this session uses.
    public nonisolated let options: SessionOptions
    /// State changes: starts with ``SessionState/idle``, finishes after ``SessionState/closed``.
    public nonisolated let state: AsyncStream<SessionState>

    private let stateContinuation: AsyncStream<SessionState>.Continuation
    private let parsedURL: MoqURL?
    private var current: SessionState = .idle
    private var connection: ReconnectingSession?
    private var session: MoqSession?
    private var sessionWatchers: [Int: AsyncStream<MoqSession>.Continuation] = [:]
    private var nextWatcher = 0
    private var subscriptions: [String: BroadcastSubscription] = [:]
    private var publishers: [String: Publisher] = [:]
    private var connectWaiter: CheckedContinuation<Result<Void, SessionError>, Never>?

    /// A session to `url`; nothing happens until ``connect()``.
    public init(url: String, options: SessionOptions = SessionOptions()) {
        self.url = url
        self.options = options
        parsedURL = try? MoqURL(url)
        let (stream, continuation) = AsyncStream<SessionState>.makeStream()
        state = stream
        stateContinuation = continuation
        continuation.yield(.idle)
    }

    /// Connects and completes the SETUP exchange.
    /// - Throws: ``SessionError/connectionFailed(_:)`` when the first attempt fails (with the
    ///   reason: unreachable, refused token, certificate), ``SessionError/alreadyConnected``.
    public func connect() async throws(SessionError) {
        guard current == .idle else {
            throw current == .closed ? .alreadyClosed : .alreadyConnected
        }
        guard let parsedURL else {
            let reason: String
            do { _ = try MoqURL(url); reason = "" } catch { reason = error.description }
            fail(.invalidConfiguration(reason))
            throw .invalidConfiguration(reason)
        }
        do { _ = try options.tls.checked() } catch {
            fail(.invalidConfiguration(error.description))
            throw .invalidConfiguration(error.description)
        }
        transition(.connecting)
        var handlers = ReconnectingSession.Handlers()
        let me = self
        handlers.session = { session, _ in Task { await me.up(session) } }
        handlers.status = { status in Task { await me.statusChanged(status) } }
        handlers.transientError = { error in Task { await me.transient(error) } }
        handlers.fatalError = { error in Task { await me.fatal(error) } }
        let connection = ReconnectingSession(
            url: parsedURL, options: options.client, handlers: handlers, retryAfterLoss: options.reconnect)
        self.connection = connection
        let result = await withCheckedContinuation { continuation in
            connectWaiter = continuation
            connection.start()
        }
        try result.get()
    }

    /// Transport metrics of the current connection, if connected.
    public func connectionStats() async -> ConnectionStats? {
        guard let session else { return nil }
        guard let stats = try? await session.stats() else { return nil }
        return ConnectionStats(
            roundTripTime: stats.rttMicros > 0 ? .microseconds(Int64(stats.rttMicros)) : nil,
            estimatedSendRateBps: stats.sendRateBps, bytesSent: stats.bytesSent, bytesReceived: stats.bytesReceived,
            packetsLost: stats.packetsLost)
    }

    /// Broadcasts announced under `prefix` (paths relative to it), across reconnects.
    /// - Throws: ``SessionError/alreadySubscribed(prefix:)`` while another subscription to the
    ///   same prefix is active; ``SessionError/alreadyClosed``.
    public func subscribe(prefix: String = "") throws(SessionError) -> BroadcastSubscription {
        guard current != .closed else { throw .alreadyClosed }
        let key = BroadcastPath.normalize(prefix)
        if let existing = subscriptions[key], !existing.isFinished { throw .alreadySubscribed(prefix: prefix) }
        let subscription = BroadcastSubscription(prefix: key, session: self, connection: connection)
        subscriptions[key] = subscription
        return subscription
    }

    /// Subscribes to the track `name` of the broadcast `broadcast` (relative to the session's
    /// root) for as long as the subscription is kept: across reconnects, relay restarts and GOAWAY
    /// handovers it resubscribes whenever the broadcast is announced again, and delivers every
    /// object once, in order (what the relay or the publisher still caches within
    /// ``TrackSubscription/latencyBudgetMs`` of the newest group is not lost in an outage).
    /// The objects stream ends when the publisher ends the track, or on ``TrackSubscription/close()``.
    /// - Throws: ``SessionError/alreadyClosed``; ``SessionError/invalidConfiguration(_:)`` for a bad path.
    public func subscribeTrack(broadcast: String, name: String) throws(SessionError) -> TrackSubscription {
        guard current != .closed else { throw .alreadyClosed }
        if let problem = BroadcastPath.validationError(broadcast) {
            throw .invalidConfiguration("broadcast path: \(problem)")
        }
        return TrackSubscription(following: BroadcastPath.normalize(broadcast), name: name, sessions: sessions())
    }

    /// Publishes `publisher`'s tracks as the broadcast `path`; call before ``Publisher/start()``.
    public func publish(path: String, publisher: Publisher) throws(SessionError) {
        guard current != .closed else { throw .alreadyClosed }
        if let problem = BroadcastPath.validationError(path) {
            throw .invalidConfiguration("broadcast path: \(problem)")
        }
        if publishers[path] != nil { throw .invalidState("a publisher is already published at \(path)") }
        try publisher.attach(url: url, options: options, path: path, connection: connection)
        publishers[path] = publisher
    }

    /// Stops and forgets the publisher at `path`.
    public func unpublish(path: String) {
        publishers.removeValue(forKey: path)?.stop()
    }

    /// Closes the connection, every subscription and publisher; the state stream finishes.
    public func close() async {
        guard current != .closed else { return }
        for subscription in subscriptions.values { subscription.cancel() }
        subscriptions = [:]
        for publisher in publishers.values { publisher.stop() }
        publishers = [:]
        connection?.stop()
        connection = nil
        session = nil
        for watcher in sessionWatchers.values { watcher.finish() }
        sessionWatchers = [:]
        resumeConnect(.failure(.alreadyClosed))
        transition(.closed)
        stateContinuation.finish()
    }

    // MARK: Internal

    /// Every moq-lite session this one gets, starting with the current (for subscriptions).
    func sessions() -> AsyncStream<MoqSession> {
        let (stream, continuation) = AsyncStream<MoqSession>.makeStream(bufferingPolicy: .bufferingNewest(1))
        guard current != .closed else {
            continuation.finish()
            return stream
        }
        let id = nextWatcher
        nextWatcher += 1
        sessionWatchers[id] = continuation
        if let session { continuation.yield(session) }
        continuation.onTermination = { _ in Task { await self.removeWatcher(id) } }
        return stream
    }

    func forget(_ subscription: BroadcastSubscription) {
        if subscriptions[subscription.prefix] === subscription { subscriptions[subscription.prefix] = nil }
    }

    private func removeWatcher(_ id: Int) { sessionWatchers[id] = nil }

    private func up(_ session: MoqSession) {
        guard current != .closed else { return }
        self.session = session
        for watcher in sessionWatchers.values { watcher.yield(session) }
        transition(.connected)
        resumeConnect(.success(()))
    }

    private func statusChanged(_ status: ReconnectingSession.Status) {
        // Handlers arrive on tasks of their own: trust the connection's live status.
        if status == .reconnecting && current == .connected && connection?.status == .reconnecting {
            session = nil
            transition(.connecting)
        }
        // Without reconnecting (SessionOptions.reconnect false), a session that ended gracefully
        // ends this one as moq-kit's does: error, then closed.
        if status == .disconnected && current == .connected && connection?.status == .disconnected {
            fail(.connectionFailed("the relay closed the session"))
        }
    }

    private func transient(_ error: MoqError) {
        KitLogger.log(.warn, "session", "\(logName): cannot connect, retrying: \(error)")
        // The first attempt failing is connect()'s failure; later ones are retried.
        guard connectWaiter != nil else { return }
        connection?.stop()
        fail(.connectionFailed(error.description))
    }

    private func fatal(_ error: MoqError) {
        KitLogger.log(.error, "session", "\(logName): \(error)")
        fail(.connectionFailed(error.description))
    }

    private func fail(_ error: SessionError) {
        guard current != .closed else { return }
        resumeConnect(.failure(error))
        transition(.error(error))
        connection?.stop()
        connection = nil
        session = nil
        for subscription in subscriptions.values { subscription.cancel() }
        for watcher in sessionWatchers.values { watcher.finish() }
        sessionWatchers = [:]
        transition(.closed)
        stateContinuation.finish()
    }

    private func resumeConnect(_ result: Result<Void, SessionError>) {
        connectWaiter?.resume(returning: result)
        connectWaiter = nil
    }

    /// The URL without its token, for log lines.
    private nonisolated var logName: String { (try? MoqURL(url))?.redacted ?? "session" }

    private func transition(_ new: SessionState) {
        guard new != current else { return }
        KitLogger.log(.info, "session", "\(logName): \(current) → \(new)")
        current = new
        stateContinuation.yield(new)
    }
}

// SPDX-License-Identifier: MIT
public import MoqWire

/// Per-session resource limits. Every bound the session enforces on what a peer can make
/// it hold is named here; going over one resets the stream that did (or closes the
/// session), logs one line (``SessionLimitEvent``) and never affects another session.
public struct SessionLimits: Sendable, Equatable {
    /// Subscriptions a peer may hold on us at once (more are reset with INTERNAL).
    public var maxServedSubscriptions = 1000
    /// TRACK requests a peer may have open on us at once (more are reset with INTERNAL).
    public var maxServedTrackRequests = 1000
    /// FETCH requests a peer may have open on us at once (more are reset with INTERNAL).
    public var maxServedFetches = 1000
    /// Announce streams a peer may open to us at once.
    public var maxServedAnnounces = 100
    /// Probe streams a peer may open to us at once (each polls the transport 10 times a second).
    public var maxServedProbes = 4
    /// Bytes we let queue on one control stream (announce or subscribe) that the peer does
    /// not read before resetting it with TOO_FAR_BEHIND: a watcher that never reads cannot
    /// grow our buffers.
    public var maxControlBacklogBytes = 1 << 20
    /// Broadcasts the peer may announce to us across all our announce requests (more
    /// reset the announce stream with INTERNAL).
    public var maxAnnouncements = 10_000
    /// Streams (of either direction) a peer may open before SETUP completes.
    public var maxPendingStreams = 256
    /// Bytes of incoming data held at once across the session: incomplete control messages
    /// (their flow-control credit is only returned once they are complete) and frames under
    /// assembly. The stream whose data goes over it is reset.
    public var maxIncomingBytes = 64 << 20
    /// Largest frame accepted on a group or fetch stream (refused before any of it is buffered).
    public var maxFrameBytes = WireLimits.maxFrame
    /// Bytes we let queue (not yet handed to the network) across the session: past it, no
    /// new group stream opens until the connection drains (back-pressure, never a reset).
    public var maxUnsentBytes = 32 << 20
    /// Bytes one subscription may have queued before its next group stream opens: a
    /// backlog is sent a group at a time (the newest first, then the rest from the oldest
    /// up), and what waits is dropped with SUBSCRIBE_DROP only once it is older than the
    /// subscriber's latency budget.
    public var subscriptionSendWindow = 64 << 10
    /// Group streams waiting for stream credit before the oldest are dropped.
    public var maxPendingGroups = 4096
    /// Our own open requests (subscriptions, fetches) at once.
    public var maxOwnRequests = 10_000

    public init() {}
}

/// How a session behaves.
public struct SessionConfig: Sendable {
    /// The role declared in SETUP (nil: not declared, which means both).
    public var role: SessionRole?
    /// The client's request path and query (SETUP Path); nil on the server.
    public var path: String?
    /// Our hop id (random, non-zero, below 2^53).
    public var hopID: UInt64
    /// Whether we advertise and serve bandwidth reports (Probe).
    public var serveProbe: Bool
    /// The price of this link: sent in SETUP (Cost) when set, and added to every route the peer
    /// announces. Unset, the peer's SETUP Cost is added, or 1 when it sent none (as moq-relay does).
    public var linkCost: UInt64?
    /// How long we wait for the peer's SETUP before closing with TIMEOUT.
    public var setupTimeout: Duration
    /// Resource limits.
    public var limits: SessionLimits

    public init(
        role: SessionRole? = nil, path: String? = nil, hopID: UInt64 = SessionConfig.randomHopID(),
        serveProbe: Bool = true, linkCost: UInt64? = nil, setupTimeout: Duration = .seconds(10),
        limits: SessionLimits = SessionLimits()
    ) {
        self.role = role
        self.path = path
        self.hopID = hopID
        self.serveProbe = serveProbe
        self.linkCost = linkCost
        self.setupTimeout = setupTimeout
        self.limits = limits
    }

    /// What a route announced by the peer costs more here: our price, else the peer's, else 1.
    func linkCost(peer: Setup?) -> UInt64 { linkCost ?? peer?.cost ?? 1 }

    /// A random non-zero hop id below 2^53.
    public static func randomHopID() -> UInt64 { UInt64.random(in: 1..<(1 << 53)) }
}

/// Why a session ended.
public enum SessionCloseReason: Error, Sendable, Equatable, CustomStringConvertible {
    /// We closed it with this code.
    case local(SessionErrorCode, String)
    /// The peer closed it with this code.
    case remote(SessionErrorCode, String)
    /// The transport failed (idle timeout, TLS, unreachable…), described for a user.
    case transport(String)

    public var description: String {
        switch self {
        case .local(let code, let reason): "closed locally: \(code)\(reason.isEmpty ? "" : " (\(reason))")"
        case .remote(let code, let reason): "closed by the peer: \(code)\(reason.isEmpty ? "" : " (\(reason))")"
        case .transport(let text): text
        }
    }

    /// True for ordinary shutdowns (code 0), which are not failures.
    public var isGraceful: Bool {
        switch self {
        case .local(let code, _), .remote(let code, _): code == .cancel
        case .transport: false
        }
    }
}

/// Events a session core reports to its owner, on the session thread.
public protocol SessionCoreDelegate: AnyObject {
    /// The peer's SETUP arrived; the session is usable. A server may close the
    /// session here (for example to refuse the path).
    func sessionDidSetup(_ session: SessionCore, peer: Setup)
    /// The peer asked us to go away (GOAWAY), optionally to `uri`.
    func session(_ session: SessionCore, didReceiveGoaway uri: String)
    /// The session ended; called exactly once, last.
    func session(_ session: SessionCore, didCloseWith reason: SessionCloseReason)
    /// A per-session limit was hit (for logging). Optional.
    func session(_ session: SessionCore, didHitLimit limit: SessionLimitEvent)
}

extension SessionCoreDelegate {
    public func session(_ session: SessionCore, didHitLimit limit: SessionLimitEvent) {}
}

/// A per-session limit that was reached (each is named in ``SessionLimits``).
public enum SessionLimitEvent: Sendable, Equatable, CustomStringConvertible {
    case servedSubscriptions(Int)
    case servedTrackRequests(Int)
    case servedFetches(Int)
    case servedAnnounces(Int)
    case servedProbes(Int)
    case controlBacklog(Int)
    case announcements(Int)
    case pendingStreams(Int)
    case incomingBytes(Int)
    case unsentBytes(Int)
    case pendingGroups(Int)

    public var description: String {
        switch self {
        case .servedSubscriptions(let n): "subscription limit reached (\(n) at once): SUBSCRIBE refused"
        case .servedTrackRequests(let n): "TRACK request limit reached (\(n) at once): request refused"
        case .servedFetches(let n): "FETCH limit reached (\(n) at once): request refused"
        case .servedAnnounces(let n): "announce limit reached (\(n) announce streams): request refused"
        case .servedProbes(let n): "probe limit reached (\(n) probe streams): request refused"
        case .controlBacklog(let n):
            "control stream not read (\(n) bytes queued): reset with TOO_FAR_BEHIND"
        case .announcements(let n): "announced broadcast limit reached (\(n)): announce stream reset"
        case .pendingStreams(let n): "pending stream limit reached (\(n) before SETUP): stream refused"
        case .incomingBytes(let n):
            "incoming buffer limit reached (\(n) bytes in incomplete messages and frames): stream reset"
        case .unsentBytes(let n): "send backlog at its bound (\(n) bytes unsent): new groups wait for the connection"
        case .pendingGroups(let n): "stream-credit backlog limit reached (\(n) groups waiting): oldest dropped"
        }
    }
}

/// A change in what a peer announces under a requested prefix.
public enum AnnounceEvent: Sendable, Equatable {
    /// A broadcast is available at `path` (absolute, normalised), by `route`.
    case active(path: String, route: AnnounceRoute)
    /// The broadcast at `path` went away.
    case ended(path: String)
    /// The announce stream closed; every broadcast it announced is gone. nil: gracefully.
    case closed(StreamErrorCode?)
}

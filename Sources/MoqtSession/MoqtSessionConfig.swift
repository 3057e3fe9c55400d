// SPDX-License-Identifier: MIT
public import MoqSession
public import MoqtWire

/// How a MoQ Transport session behaves.
public struct MoqtSessionConfig: Sendable {
    /// The draft spoken (chosen by ALPN: `moq-00` → draft-14, `moqt-16` → draft-16).
    public var version: MoqtVersion
    /// The client's PATH setup parameter on raw QUIC (`/anon`…): the relay roots the session there.
    /// Nil over WebTransport (the URL carries it) and on servers.
    public var path: String?
    /// Requests the peer may have open at once: the window of request ids we grant, raised as its
    /// requests end (moq-dev grants 2^32 up front; a count a peer feeds must have a bound).
    public var maxPeerRequests: UInt64
    /// Our own requests that may wait for the peer's MAX_REQUEST_ID before they are refused.
    public var maxQueuedRequests: Int
    /// Group streams whose SUBSCRIBE_OK has not arrived yet (their alias is unknown) that are held;
    /// past this, such a stream is stopped.
    public var maxUnknownAliasStreams: Int
    /// How long a group stream with an unknown alias may wait for its SUBSCRIBE_OK.
    public var unknownAliasWait: Duration
    /// Groups a served subscription may queue behind a slow connection before the oldest is dropped.
    public var maxQueuedGroups: Int
    /// Unsent bytes of ours across the connection above which no new group stream opens.
    public var maxUnsentBytes: Int
    /// Broadcasts a peer may announce to us (across our namespace subscriptions).
    public var maxAnnounced: Int
    /// How long the peer has to complete SETUP.
    public var setupTimeout: Duration
    /// The IMPLEMENTATION setup parameter.
    public var implementation: String
    /// Servers over WebTransport: the CONNECT's path, which is the session's path (``MoqtSessionCore/peerPath``);
    /// a PATH setup parameter is then ignored (it could not widen what the CONNECT was admitted for).
    public var connectPath: String?
    /// How long the group a late joiner came into the middle of waits for the joining FETCH that
    /// brings its first objects, before it is written as it came.
    public var joiningFetchWait: Duration = .seconds(2)
    /// How long a standalone FETCH of ours waits for the end of its objects before it fails.
    public var fetchTimeout: Duration = .seconds(10)
    /// Whether the peer hears what the origin publishes: SUBSCRIBE_NAMESPACE's listing, and the
    /// unsolicited PUBLISH_NAMESPACE to a peer that does not solicit (false: a SUBSCRIBE_NAMESPACE is
    /// accepted and lists nothing, as relays that route subscriptions without announcing do, Cloudflare's).
    public var listsNamespaces = true

    public init(
        version: MoqtVersion, path: String? = nil, maxPeerRequests: UInt64 = 256, maxQueuedRequests: Int = 1_024,
        maxUnknownAliasStreams: Int = 64, unknownAliasWait: Duration = .seconds(1), maxQueuedGroups: Int = 64,
        maxUnsentBytes: Int = 4 * 1024 * 1024, maxAnnounced: Int = 10_000, setupTimeout: Duration = .seconds(10),
        implementation: String = "swiftmoq"
    ) {
        self.version = version
        self.path = path
        self.maxPeerRequests = maxPeerRequests
        self.maxQueuedRequests = maxQueuedRequests
        self.maxUnknownAliasStreams = maxUnknownAliasStreams
        self.unknownAliasWait = unknownAliasWait
        self.maxQueuedGroups = maxQueuedGroups
        self.maxUnsentBytes = maxUnsentBytes
        self.maxAnnounced = maxAnnounced
        self.setupTimeout = setupTimeout
        self.implementation = implementation
    }
}

extension MoqtSessionConfig {
    /// The same bounds tightened to a server's per-session ``SessionLimits`` (moq-lite's): a limit
    /// set below this family's default applies to it too; the defaults themselves stay (a window of
    /// 256 requests, 4 MiB unsent, 64 streams waiting for their alias, 10,000 announcements).
    public func tightened(to limits: SessionLimits) -> MoqtSessionConfig {
        var config = self
        let requests = limits.maxServedSubscriptions + limits.maxServedFetches + limits.maxServedAnnounces
        config.maxPeerRequests = min(config.maxPeerRequests, UInt64(max(1, requests)))
        config.maxAnnounced = min(config.maxAnnounced, limits.maxAnnouncements)
        config.maxUnknownAliasStreams = min(config.maxUnknownAliasStreams, limits.maxPendingStreams)
        config.maxUnsentBytes = min(config.maxUnsentBytes, limits.maxUnsentBytes)
        return config
    }
}

/// MoQ Transport's session termination codes (drafts 14 and 16, §session-termination).
public enum MoqtSessionError: UInt64, Sendable, CustomStringConvertible {
    case noError = 0x0
    case internalError = 0x1
    case unauthorized = 0x2
    case protocolViolation = 0x3
    case invalidRequestID = 0x4
    case duplicateTrackAlias = 0x5
    case keyValueFormattingError = 0x6
    case tooManyRequests = 0x7
    case invalidPath = 0x8
    case malformedPath = 0x9
    case goawayTimeout = 0x10
    case controlMessageTimeout = 0x11
    case versionNegotiationFailed = 0x15

    public var description: String {
        switch self {
        case .noError: "no error"
        case .internalError: "internal error"
        case .unauthorized: "unauthorized"
        case .protocolViolation: "protocol violation"
        case .invalidRequestID: "invalid request id"
        case .duplicateTrackAlias: "duplicate track alias"
        case .keyValueFormattingError: "key-value formatting error"
        case .tooManyRequests: "too many requests"
        case .invalidPath: "invalid path"
        case .malformedPath: "malformed path"
        case .goawayTimeout: "GOAWAY timeout"
        case .controlMessageTimeout: "control message timeout"
        case .versionNegotiationFailed: "version negotiation failed"
        }
    }
}

/// Request error codes SwiftMoQ sends (the same values on drafts 14 and 16 for these three, except
/// where noted), and PUBLISH_DONE's status codes.
public enum MoqtCode {
    /// REQUEST_ERROR / SUBSCRIBE_ERROR: INTERNAL_ERROR.
    public static let internalError: UInt64 = 0x0
    /// REQUEST_ERROR / SUBSCRIBE_ERROR / PUBLISH_NAMESPACE_ERROR: UNAUTHORIZED.
    public static let unauthorized: UInt64 = 0x1
    /// REQUEST_ERROR / SUBSCRIBE_ERROR: NOT_SUPPORTED.
    public static let notSupported: UInt64 = 0x3
    /// The track does not exist: TRACK_DOES_NOT_EXIST (`0x4`) on draft-14, DOES_NOT_EXIST (`0x10`) on 16.
    public static func doesNotExist(_ version: MoqtVersion) -> UInt64 { version == .draft14 ? 0x4 : 0x10 }
    /// PUBLISH_DONE: TRACK_ENDED.
    public static let trackEnded: UInt64 = 0x2
    /// PUBLISH_DONE: SUBSCRIPTION_ENDED (after an UNSUBSCRIBE).
    public static let subscriptionEnded: UInt64 = 0x3
    /// PUBLISH_DONE: GOING_AWAY (the session closes).
    public static let goingAway: UInt64 = 0x4
    /// Data stream reset: CANCELLED.
    public static let cancelled: UInt64 = 0x1
    /// Data stream reset: INTERNAL_ERROR.
    public static let streamInternal: UInt64 = 0x0
}

/// How a MoQ Transport session ended.
public enum MoqtCloseReason: Sendable, Equatable, CustomStringConvertible {
    /// We closed it.
    case local(MoqtSessionError, String)
    /// The peer closed it, with its raw code.
    case remote(UInt64, String)
    /// The transport failed.
    case transport(String)

    public var description: String {
        switch self {
        case .local(let code, let reason): "closed locally: \(code)\(reason.isEmpty ? "" : " (\(reason))")"
        case .remote(let code, let reason): "closed by the peer: code \(code)\(reason.isEmpty ? "" : " (\(reason))")"
        case .transport(let why): why
        }
    }
}

// SPDX-License-Identifier: MIT

/// Where a ``Session`` stands (moq-kit's `SessionState`).
///
/// Unlike moq-kit, a connected session that loses its relay goes back to ``connecting``
/// and reconnects with backoff (0.5, 1, 1 s…); only a failure retrying cannot fix
/// (authentication, TLS, configuration) or ``Session/close()`` ends it.
public enum SessionState: Sendable, Equatable, CustomStringConvertible {
    /// Created; ``Session/connect()`` not called yet.
    case idle
    /// Connecting (first time, or again after a loss).
    case connecting
    /// A moq-lite session is up.
    case connected
    /// Failed for good; ``closed`` follows.
    case error(SessionError)
    /// Closed; the state stream finishes.
    case closed

    /// A one-word description.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .connected: "connected"
        case .error(let e): "error(\(e))"
        case .closed: "closed"
        }
    }
}

/// What went wrong, worded for the user (moq-kit's `SessionError` cases that apply on Linux).
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ``Session/connect()`` was called twice.
    case alreadyConnected
    /// The session was closed.
    case alreadyClosed
    /// A subscription to this exact prefix is already active.
    case alreadySubscribed(prefix: String)
    /// The operation needs a connected session.
    case notConnected
    /// The relay could not be reached or refused the session.
    case connectionFailed(String)
    /// A setting is wrong (URL, TLS options, track configuration).
    case invalidConfiguration(String)
    /// The catalog offers no track to play.
    case noTracksAvailable
    /// A codec cannot be played or encoded here.
    case unsupportedCodec(String)
    /// A publisher or player was used in a way it does not allow (e.g. started twice).
    case invalidState(String)

    /// The message.
    public var description: String {
        switch self {
        case .alreadyConnected: "the session is already connected"
        case .alreadyClosed: "the session is closed"
        case .alreadySubscribed(let prefix): "a subscription to prefix \"\(prefix)\" is already active"
        case .notConnected: "the session is not connected: call connect() first"
        case .connectionFailed(let text): "connection failed: \(text)"
        case .invalidConfiguration(let text): "invalid configuration: \(text)"
        case .noTracksAvailable: "the catalog has no playable track"
        case .unsupportedCodec(let text): "unsupported codec: \(text)"
        case .invalidState(let text): text
        }
    }
}

/// Transport metrics of a session (moq-kit's `ConnectionStats`; missing and zero are distinct).
public struct ConnectionStats: Sendable, Equatable {
    /// Smoothed round-trip time.
    public var roundTripTime: Duration?
    /// The congestion controller's send rate estimate, bit/s.
    public var estimatedSendRateBps: UInt64?
    /// Bytes sent on the connection.
    public var bytesSent: UInt64?
    /// Bytes received on the connection.
    public var bytesReceived: UInt64?
    /// Packets declared lost.
    public var packetsLost: UInt64?
}

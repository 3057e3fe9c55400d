// SPDX-License-Identifier: MIT
public import MoqWire

/// Errors of the SwiftMoQ API. Each message says what happened and what to do.
public enum MoqError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL could not be used.
    case invalidURL(String)
    /// Options contradict each other or are malformed.
    case configuration(String)
    /// The relay could not be reached (DNS, no answer, ICMP).
    case unreachable(String)
    /// The TLS handshake failed (untrusted certificate, fingerprint mismatch, no common ALPN).
    case tls(String)
    /// The relay refused or closed the session.
    case refused(code: UInt64, reason: String)
    /// The broadcast is not known to the peer.
    case broadcastNotFound(String)
    /// The track is not known to the peer.
    case trackNotFound(broadcast: String, track: String)
    /// A request failed with a stream error code.
    case request(StreamErrorCode)
    /// The session is closed.
    case closed(String)
    /// Nothing happened within the time allowed.
    case timeout(String)

    public var description: String {
        switch self {
        case .invalidURL(let s), .configuration(let s), .unreachable(let s), .tls(let s), .closed(let s),
            .timeout(let s):
            s
        case .refused(let code, let reason):
            "the relay refused the session: \(SessionErrorCode(rawValue: code))\(reason.isEmpty ? "" : " (\(reason))")"
                + (code == SessionErrorCode.unauthorized.rawValue ? "; check the path and the token (?jwt=)" : "")
        case .broadcastNotFound(let b): "broadcast '\(b)' is not announced by the relay (unknown broadcast)"
        case .trackNotFound(let b, let t): "broadcast '\(b)' has no track '\(t)'"
        case .request(let code): "request failed: \(code)"
        }
    }

    /// True when retrying cannot help without a change (authentication, configuration, TLS).
    public var isFatal: Bool {
        switch self {
        case .invalidURL, .configuration, .tls: true
        case .refused(let code, _): code == SessionErrorCode.unauthorized.rawValue
        default: false
        }
    }
}

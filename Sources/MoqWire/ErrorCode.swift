// SPDX-License-Identifier: MIT

/// Session error codes, carried raw in the QUIC CONNECTION_CLOSE application code.
public struct SessionErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Normal close, no error.
    public static let cancel = SessionErrorCode(rawValue: 0x0)
    /// An internal failure.
    public static let `internal` = SessionErrorCode(rawValue: 0x1)
    /// The peer is not authorised (bad or missing token).
    public static let unauthorized = SessionErrorCode(rawValue: 0x2)
    /// The peer broke the protocol (malformed control data, a second SETUP…).
    public static let protocolViolation = SessionErrorCode(rawValue: 0x3)
    /// A SETUP parameter was malformed.
    public static let keyValueFormatting = SessionErrorCode(rawValue: 0x6)
    /// Too many requests.
    public static let tooManyRequests = SessionErrorCode(rawValue: 0x7)
    /// The peer did not leave after GOAWAY in time.
    public static let goawayTimeout = SessionErrorCode(rawValue: 0x10)
    /// A control message (SETUP) did not arrive in time.
    public static let timeout = SessionErrorCode(rawValue: 0x11)
    /// No common version.
    public static let version = SessionErrorCode(rawValue: 0x15)

    /// Application code `n`, sent as 64 + n (saturating at the varint ceiling).
    public static func application(_ n: UInt64) -> SessionErrorCode {
        SessionErrorCode(rawValue: VarInt.saturatingAdd(64, n))
    }

    public var description: String {
        switch self {
        case .cancel: "no error"
        case .internal: "internal error"
        case .unauthorized: "unauthorized"
        case .protocolViolation: "protocol violation"
        case .keyValueFormatting: "malformed parameters"
        case .tooManyRequests: "too many requests"
        case .goawayTimeout: "goaway timeout"
        case .timeout: "timeout"
        case .version: "unsupported version"
        default: rawValue >= 64 ? "application error \(rawValue - 64)" : "error 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// Stream error codes, carried in RESET_STREAM and STOP_SENDING.
///
/// On the wire they are mapped into the WebTransport error range even on raw
/// QUIC (``wireValue`` / ``init(wireValue:)``), exactly as the Rust peer does.
public struct StreamErrorCode: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Internal error (a relay's upstream session went away).
    public static let `internal` = StreamErrorCode(rawValue: 0x0)
    /// Routine cancellation (unsubscribe, unknown stream type).
    public static let cancel = StreamErrorCode(rawValue: 0x1)
    /// Delivery timed out.
    public static let deliveryTimeout = StreamErrorCode(rawValue: 0x2)
    /// The session closed.
    public static let sessionClosed = StreamErrorCode(rawValue: 0x3)
    /// The session is going away.
    public static let goingAway = StreamErrorCode(rawValue: 0x4)
    /// The reader lagged too far behind.
    public static let tooFarBehind = StreamErrorCode(rawValue: 0x5)
    /// Malformed track data (any decode error on a data or request stream).
    public static let malformedTrack = StreamErrorCode(rawValue: 0x12)
    /// A control request timed out.
    public static let controlTimeout = StreamErrorCode(rawValue: 0x31)
    /// A group exceeded its size limit.
    public static let groupTooLarge = StreamErrorCode(rawValue: 0x32)
    /// Unknown track.
    public static let notFound = StreamErrorCode(rawValue: 0x33)
    /// A superseded group.
    public static let old = StreamErrorCode(rawValue: 0x34)
    /// Evicted from a cache.
    public static let evicted = StreamErrorCode(rawValue: 0x35)
    /// Unknown broadcast (no route).
    public static let unroutable = StreamErrorCode(rawValue: 0x36)
    /// A frame's size did not match.
    public static let wrongSize = StreamErrorCode(rawValue: 0x37)
    /// A frame exceeded its size limit.
    public static let frameTooLarge = StreamErrorCode(rawValue: 0x38)
    /// Timestamps disagreed.
    public static let timestampMismatch = StreamErrorCode(rawValue: 0x39)

    /// Application code `n`, sent as 64 + n (saturating at the varint ceiling).
    public static func application(_ n: UInt64) -> StreamErrorCode {
        StreamErrorCode(rawValue: VarInt.saturatingAdd(64, n))
    }

    /// The first value of the WebTransport error-code range.
    public static let webTransportBase: UInt64 = 0x52e4_a40f_a8db
    /// The last value of the WebTransport error-code range.
    public static let webTransportLast: UInt64 = 0x52e5_ac98_3162

    /// The value put in RESET_STREAM / STOP_SENDING: `base + n + ⌊n / 30⌋`. The WebTransport range
    /// holds 32-bit codes: a larger one (a peer's SUBSCRIBE_DROP may carry any varint) is sent as
    /// the last code of the range instead of overflowing it.
    public var wireValue: UInt64 {
        let n = Swift.min(rawValue, UInt64(UInt32.max))
        return Self.webTransportBase + n + n / 0x1e
    }

    /// Decodes a RESET_STREAM / STOP_SENDING value; nil outside the WebTransport range
    /// (the Rust stack's raw `0` STOP_SENDING is such a value: "peer stopped reading").
    public init?(wireValue: UInt64) {
        guard wireValue >= Self.webTransportBase, wireValue <= Self.webTransportLast else { return nil }
        let c = wireValue - Self.webTransportBase
        // Values that land on the skipped reserved codepoints (every 31st) are not valid.
        guard (c + 1) % 0x1f != 0 else { return nil }
        rawValue = c - c / 0x1f
    }

    public var description: String {
        switch self {
        case .internal: "internal error"
        case .cancel: "cancelled"
        case .deliveryTimeout: "delivery timeout"
        case .sessionClosed: "session closed"
        case .goingAway: "going away"
        case .tooFarBehind: "too far behind"
        case .malformedTrack: "malformed track"
        case .controlTimeout: "control timeout"
        case .groupTooLarge: "group too large"
        case .notFound: "not found"
        case .old: "old group"
        case .evicted: "evicted"
        case .unroutable: "unroutable (unknown broadcast)"
        case .wrongSize: "wrong size"
        case .frameTooLarge: "frame too large"
        case .timestampMismatch: "timestamp mismatch"
        default: rawValue >= 64 ? "application error \(rawValue - 64)" : "stream error 0x\(String(rawValue, radix: 16))"
        }
    }
}

extension DecodeError {
    /// The stream code a decode error on a request or data stream resets with.
    public var streamCode: StreamErrorCode {
        switch self {
        case .tooLarge: .frameTooLarge
        default: .malformedTrack
        }
    }
}

// SPDX-License-Identifier: MIT
public import MoqBase

/// What a ``QMuxConnection`` reports to the layer above (the session core's transport adapter),
/// in the order it happened. Taken with ``QMuxConnection/takeEvents()`` after each input.
public enum QMuxEvent: Sendable, Equatable {
    /// The peer's transport parameters arrived: streams can be opened and data flows.
    case ready
    /// The peer opened a stream (its first frame arrived).
    case streamOpened(Int64)
    /// Stream data, in order; `fin` marks its end.
    case received(Int64, Bytes, fin: Bool)
    /// The peer abandoned sending on a stream (RESET_STREAM), with its raw code.
    case streamReset(Int64, code: UInt64)
    /// The peer asked us to stop sending on a stream (STOP_SENDING), with its raw code.
    case stopSending(Int64, code: UInt64)
    /// Both halves of a stream are done; its id is never reported again.
    case streamClosed(Int64)
    /// The peer raised its stream limit: a stream of this kind can be opened now.
    case streamCredit(bidirectional: Bool)
    /// Fewer bytes than the threshold of ``QMuxConnection/notifyWhenUnsent(below:)`` remain unsent.
    case unsentBelow
    /// The connection ended; nothing follows.
    case closed(QMuxCloseReason)
}

/// Why a qmux connection ended.
public enum QMuxCloseReason: Sendable, Equatable, CustomStringConvertible {
    /// APPLICATION_CLOSE: the session's own code, raw.
    case application(code: UInt64, reason: String, byPeer: Bool)
    /// CONNECTION_CLOSE: a qmux (QUIC transport) error.
    case transport(code: UInt64, reason: String, byPeer: Bool)
    /// Nothing arrived for the idle timeout.
    case idleTimeout
    /// The byte stream under it ended or failed (WebSocket close, TCP reset).
    case lost(String)

    public var description: String {
        switch self {
        case .application(let code, let reason, let byPeer):
            "\(byPeer ? "the peer closed" : "closed") with code \(code)\(reason.isEmpty ? "" : " (\(reason))")"
        case .transport(let code, let reason, let byPeer):
            "qmux error 0x\(String(code, radix: 16)) \(byPeer ? "from the peer" : "detected")"
                + (reason.isEmpty ? "" : ": \(reason)")
        case .idleTimeout: "idle: nothing arrived for the idle timeout"
        case .lost(let why): "connection lost: \(why)"
        }
    }
}

/// QUIC's transport error codes (RFC 9000 §20.1), which qmux's CONNECTION_CLOSE carries.
public enum QMuxTransportCode {
    public static let internalError: UInt64 = 0x1
    public static let flowControl: UInt64 = 0x3
    public static let streamLimit: UInt64 = 0x4
    public static let streamState: UInt64 = 0x5
    public static let finalSize: UInt64 = 0x6
    public static let frameEncoding: UInt64 = 0x7
    public static let transportParameter: UInt64 = 0x8
    public static let protocolViolation: UInt64 = 0xa
}

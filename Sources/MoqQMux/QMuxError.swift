// SPDX-License-Identifier: MIT

/// Why qmux bytes were refused. Each closes the session with CONNECTION_CLOSE, as moq-dev's qmux
/// does (code 1002 there, the reason its description).
public enum QMuxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A frame could not be decoded (truncated, lengths that do not fit, a value out of range).
    case frameEncoding(String)
    /// A frame type qmux does not carry (QUIC's PING, ACK, CRYPTO…) or does not know.
    case frameType(UInt64)
    /// A record larger than the limit.
    case recordTooLarge(size: Int, limit: Int)
    /// The transport parameters were malformed or forbidden.
    case transportParameter(String)

    public var description: String {
        switch self {
        case .frameEncoding(let what): "malformed frame: \(what)"
        case .frameType(let t): "frame type 0x\(String(t, radix: 16)) is not carried by qmux"
        case .recordTooLarge(let size, let limit): "record of \(size) bytes exceeds \(limit)"
        case .transportParameter(let what): "transport parameters: \(what)"
        }
    }
}

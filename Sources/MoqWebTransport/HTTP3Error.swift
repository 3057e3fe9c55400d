// SPDX-License-Identifier: MIT

/// HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6), and the WebTransport session error.
public struct HTTP3Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The code a connection (or stream) is closed with.
    public let code: UInt64
    /// What went wrong, for logs and messages.
    public let reason: String

    public init(_ code: UInt64, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let noError: UInt64 = 0x100
    public static let generalProtocolError: UInt64 = 0x101
    public static let internalError: UInt64 = 0x102
    public static let streamCreationError: UInt64 = 0x103
    public static let closedCriticalStream: UInt64 = 0x104
    public static let frameUnexpected: UInt64 = 0x105
    public static let frameError: UInt64 = 0x106
    public static let excessiveLoad: UInt64 = 0x107
    public static let idError: UInt64 = 0x108
    public static let settingsError: UInt64 = 0x109
    public static let missingSettings: UInt64 = 0x10a
    public static let requestRejected: UInt64 = 0x10b
    public static let requestCancelled: UInt64 = 0x10c
    public static let messageError: UInt64 = 0x10e
    public static let connectError: UInt64 = 0x10f
    public static let qpackDecompressionFailed: UInt64 = 0x200
    /// WebTransport's "the data was not all delivered" session code (draft-ietf-webtrans-http3 §9.5).
    public static let webTransportBufferedStreamRejected: UInt64 = 0x3994_bd84

    public var description: String { "HTTP/3 error 0x\(String(code, radix: 16)): \(reason)" }
}

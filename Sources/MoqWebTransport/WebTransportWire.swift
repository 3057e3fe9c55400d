// SPDX-License-Identifier: MIT
import MoqWire

/// The bytes WebTransport over HTTP/3 puts around a session's streams and datagrams
/// (draft-ietf-webtrans-http3; the values moq-dev's implementation and browsers use).
public enum WebTransportWire {
    /// The ALPN of HTTP/3, which WebTransport runs over.
    public static let alpn = "h3"
    /// HTTP/3 unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
    public static let controlStreamType: UInt64 = 0x00
    public static let pushStreamType: UInt64 = 0x01
    public static let qpackEncoderStreamType: UInt64 = 0x02
    public static let qpackDecoderStreamType: UInt64 = 0x03
    /// A WebTransport unidirectional stream: type 0x54, then the session id.
    public static let uniStreamType: UInt64 = 0x54
    /// A WebTransport bidirectional stream: the signal value 0x41, then the session id.
    public static let bidiSignal: UInt64 = 0x41
    /// The stream error for a stream of a session that does not exist (WEBTRANSPORT_BUFFERED_STREAM_REJECTED).
    public static let bufferedStreamRejected: UInt64 = 0x3994_bd84

    /// The preamble of a unidirectional stream of `session` (the CONNECT stream's id).
    public static func uniStreamHeader(session: UInt64) -> [UInt8] { header(uniStreamType, session) }

    /// The preamble of a bidirectional stream of `session`.
    public static func bidiStreamHeader(session: UInt64) -> [UInt8] { header(bidiSignal, session) }

    private static func header(_ type: UInt64, _ session: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        VarInt.encode(type, into: &out)
        VarInt.encode(session, into: &out)
        return out
    }

    /// A datagram of `session`: the quarter stream id (RFC 9297), then the payload.
    public static func datagram(session: UInt64, payload: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        VarInt.encode(session / 4, into: &out)
        return out + payload
    }

    /// Splits a received datagram into its quarter stream id and payload offset; nil when malformed.
    public static func parseDatagram(_ bytes: [UInt8]) -> (quarterStreamID: UInt64, payloadStart: Int)? {
        var cursor = 0
        guard let id = decodeVarInt(bytes, &cursor) else { return nil }
        return (id, cursor)
    }
}

/// A capsule on the CONNECT stream (RFC 9297 §3.2), carried in DATA frames.
public enum WebTransportCapsule: Sendable, Equatable {
    /// CLOSE_WEBTRANSPORT_SESSION: an application code and a reason (at most 1024 bytes).
    case close(code: UInt32, reason: String)
    /// DRAIN_WEBTRANSPORT_SESSION: the peer asks for the session to end soon (GOAWAY's analogue).
    case drain
    /// Another capsule type (ignored).
    case unknown(type: UInt64)

    public static let closeType: UInt64 = 0x2843
    public static let drainType: UInt64 = 0x78ae
    public static let maxReasonBytes = 1024

    public func encoded() -> [UInt8] {
        var value: [UInt8] = []
        let type: UInt64
        switch self {
        case .close(let code, let reason):
            type = Self.closeType
            value = [
                UInt8(code >> 24), UInt8(truncatingIfNeeded: code >> 16), UInt8(truncatingIfNeeded: code >> 8),
                UInt8(truncatingIfNeeded: code),
            ]
            value += Self.truncatedUTF8(reason, to: Self.maxReasonBytes)
        case .drain: type = Self.drainType
        case .unknown(let t): type = t
        }
        var out: [UInt8] = []
        VarInt.encode(type, into: &out)
        VarInt.encode(UInt64(value.count), into: &out)
        return out + value
    }

    /// The longest prefix of `text` that fits `limit` bytes and ends on a character boundary.
    static func truncatedUTF8(_ text: String, to limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if out.count + bytes.count > limit { break }
            out += bytes
        }
        return out
    }
}

/// Reads capsules from the DATA frames of a CONNECT stream; unknown capsules are skipped as they
/// stream past, and a capsule longer than its limit is an error.
public struct CapsuleReader: Sendable {
    /// The largest capsule value kept (CLOSE's is 4 + 1024 bytes).
    public static let maxValue = 4 * 1024

    private var buffer: [UInt8] = []
    private var skipping: UInt64 = 0

    public init() {}

    public var buffered: Int { buffer.count }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        var rest = ArraySlice(bytes)
        if skipping > 0 {
            let n = Int(min(skipping, UInt64(rest.count)))
            rest = rest.dropFirst(n)
            skipping -= UInt64(n)
        }
        buffer += rest
    }

    /// The next complete capsule; nil until more bytes arrive.
    public mutating func next() throws(HTTP3Error) -> WebTransportCapsule? {
        guard skipping == 0 else { return nil }
        var cursor = 0
        guard let type = decodeVarInt(buffer, &cursor), let length = decodeVarInt(buffer, &cursor) else { return nil }
        guard type == WebTransportCapsule.closeType || type == WebTransportCapsule.drainType else {
            // Skipped without being held, however long.
            let available = UInt64(buffer.count - cursor)
            if length <= available {
                buffer.removeFirst(cursor + Int(length))
            } else {
                buffer.removeAll()
                skipping = length - available
            }
            return .unknown(type: type)
        }
        guard length <= UInt64(Self.maxValue) else {
            throw HTTP3Error(HTTP3Error.messageError, "capsule of \(length) bytes exceeds \(Self.maxValue)")
        }
        guard buffer.count - cursor >= Int(length) else { return nil }
        let value = Array(buffer[cursor..<cursor + Int(length)])
        buffer.removeFirst(cursor + Int(length))
        if type == WebTransportCapsule.drainType { return .drain }
        guard value.count >= 4, value.count - 4 <= WebTransportCapsule.maxReasonBytes else {
            throw HTTP3Error(HTTP3Error.messageError, "malformed CLOSE_WEBTRANSPORT_SESSION")
        }
        let code = value[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return .close(code: code, reason: String(decoding: value[4...], as: UTF8.self))
    }
}

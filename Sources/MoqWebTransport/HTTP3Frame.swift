// SPDX-License-Identifier: MIT
import MoqWire

/// An HTTP/3 frame (RFC 9114 §7.2) as this implementation uses them.
public enum HTTP3Frame: Sendable, Equatable {
    case data([UInt8])
    case headers([UInt8])
    case settings(HTTP3Settings)
    case goaway(UInt64)
    /// CANCEL_PUSH, PUSH_PROMISE, MAX_PUSH_ID: known, never valid here (no push).
    case push(type: UInt64)

    public static let dataType: UInt64 = 0x00
    public static let headersType: UInt64 = 0x01
    public static let cancelPushType: UInt64 = 0x03
    public static let settingsType: UInt64 = 0x04
    public static let pushPromiseType: UInt64 = 0x05
    public static let goawayType: UInt64 = 0x07
    public static let maxPushIDType: UInt64 = 0x0d

    /// Frame types reserved by HTTP/2 that HTTP/3 forbids (H3_FRAME_UNEXPECTED).
    static let http2Types: Set<UInt64> = [0x02, 0x06, 0x08, 0x09]

    /// The frame on the wire.
    public func encoded() -> [UInt8] {
        var payload: [UInt8]
        let type: UInt64
        switch self {
        case .data(let bytes): (type, payload) = (Self.dataType, bytes)
        case .headers(let bytes): (type, payload) = (Self.headersType, bytes)
        case .settings(let settings): (type, payload) = (Self.settingsType, settings.encoded())
        case .goaway(let id):
            type = Self.goawayType
            payload = []
            VarInt.encode(min(id, VarInt.max), into: &payload)
        case .push(let t): (type, payload) = (t, [])
        }
        var out: [UInt8] = []
        VarInt.encode(type, into: &out)
        VarInt.encode(UInt64(payload.count), into: &out)
        return out + payload
    }
}

/// Reads HTTP/3 frames from a stream's bytes as they arrive. Unknown and reserved frame types
/// are skipped without being held (RFC 9114 §9); a frame longer than its limit is an error.
public struct HTTP3FrameReader: Sendable {
    /// The largest payload kept for a frame other than DATA.
    public static let maxControlPayload = 16 * 1024
    /// The largest DATA payload kept (this implementation carries only capsules in DATA).
    public static let maxDataPayload = 64 * 1024

    private var buffer: [UInt8] = []
    private var start = 0
    /// Bytes of an unknown frame still to skip.
    private var skipping: UInt64 = 0

    public init() {}

    /// Bytes held (for the session's budget).
    public var buffered: Int { buffer.count - start }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer += bytes
    }

    /// The next complete frame; nil until more bytes arrive.
    public mutating func next() throws(HTTP3Error) -> HTTP3Frame? {
        while true {
            if skipping > 0 {
                let n = Int(min(skipping, UInt64(buffer.count - start)))
                start += n
                skipping -= UInt64(n)
                if skipping > 0 { return nil }
            }
            var cursor = start
            guard let type = readVarInt(&cursor), let length = readVarInt(&cursor) else { return nil }
            let known: Set<UInt64> = [
                HTTP3Frame.dataType, HTTP3Frame.headersType, HTTP3Frame.settingsType, HTTP3Frame.goawayType,
                HTTP3Frame.cancelPushType, HTTP3Frame.pushPromiseType, HTTP3Frame.maxPushIDType,
            ]
            if HTTP3Frame.http2Types.contains(type) {
                throw HTTP3Error(HTTP3Error.frameUnexpected, "HTTP/2 frame type 0x\(String(type, radix: 16))")
            }
            guard known.contains(type) else {
                // Unknown or reserved (grease): skipped as it streams past.
                start = cursor
                skipping = length
                continue
            }
            let limit = type == HTTP3Frame.dataType ? Self.maxDataPayload : Self.maxControlPayload
            guard length <= UInt64(limit) else {
                throw HTTP3Error(HTTP3Error.excessiveLoad, "frame of \(length) bytes exceeds \(limit)")
            }
            guard buffer.count - cursor >= Int(length) else { return nil }
            let payload = Array(buffer[cursor..<cursor + Int(length)])
            start = cursor + Int(length)
            switch type {
            case HTTP3Frame.dataType: return .data(payload)
            case HTTP3Frame.headersType: return .headers(payload)
            case HTTP3Frame.settingsType: return .settings(try HTTP3Settings(decoding: payload))
            case HTTP3Frame.goawayType:
                var c = 0
                guard let id = decodeVarInt(payload, &c), c == payload.count else {
                    throw HTTP3Error(HTTP3Error.frameError, "malformed GOAWAY")
                }
                return .goaway(id)
            default: return .push(type: type)
            }
        }
    }

    private func readVarInt(_ cursor: inout Int) -> UInt64? { decodeVarInt(buffer, &cursor) }
}

/// A QUIC varint at `cursor` in `bytes`, advancing it; nil when incomplete.
func decodeVarInt(_ bytes: [UInt8], _ cursor: inout Int) -> UInt64? {
    guard cursor < bytes.count else { return nil }
    let length = VarInt.length(firstByte: bytes[cursor])
    guard bytes.count - cursor >= length else { return nil }
    var value = UInt64(bytes[cursor] & 0x3f)
    for i in 1..<length { value = value << 8 | UInt64(bytes[cursor + i]) }
    cursor += length
    return value
}

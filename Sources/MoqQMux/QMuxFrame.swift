// SPDX-License-Identifier: MIT
public import MoqBase
import MoqWire

/// One qmux frame: a QUIC v1 frame carried without packets or acknowledgements (draft-ietf-quic-qmux,
/// moq-dev's qmux 0.5). Over WebSocket one binary message is one record: its frames back to back,
/// without a size prefix. The first part of moq-lite over WebSocket (issue #25, part 1): the codec;
/// the session that drives it is not built yet.
public enum QMuxFrame: Sendable, Equatable {
    /// 0x00, ignored.
    case padding
    /// 0x04: the sender abandons sending on a stream.
    case resetStream(id: UInt64, code: UInt64, finalSize: UInt64)
    /// 0x05: the receiver asks the sender to stop.
    case stopSending(id: UInt64, code: UInt64)
    /// 0x08–0x0f: stream data at `offset`; `fin` ends the stream.
    case stream(id: UInt64, offset: UInt64, data: Bytes, fin: Bool)
    /// 0x10: connection-wide credit.
    case maxData(UInt64)
    /// 0x11: one stream's credit.
    case maxStreamData(id: UInt64, max: UInt64)
    /// 0x12 / 0x13: streams the peer may open (cumulative).
    case maxStreams(bidirectional: Bool, max: UInt64)
    /// 0x14: the sender is blocked by connection credit.
    case dataBlocked(UInt64)
    /// 0x15: the sender is blocked by a stream's credit.
    case streamDataBlocked(id: UInt64, limit: UInt64)
    /// 0x16 / 0x17: the sender is blocked by the stream count.
    case streamsBlocked(bidirectional: Bool, limit: UInt64)
    /// 0x1c: a transport error closes the session.
    case connectionClose(code: UInt64, frameType: UInt64, reason: String)
    /// 0x1d: the application closes the session.
    case applicationClose(code: UInt64, reason: String)
    /// 0x30 / 0x31: a datagram.
    case datagram(Bytes)
    /// The transport parameters, each side's first frame.
    case transportParameters(QMuxTransportParameters)
    /// QX_PING request (answered with ``pingResponse(_:)`` echoing the sequence).
    case ping(UInt64)
    /// QX_PING response.
    case pingResponse(UInt64)

    /// Frame types.
    enum Kind {
        static let transportParameters: UInt64 = 0x3f51_5330_0d0a_0d0a
        static let pingRequest: UInt64 = 0x348c_6752_9ef8_c7bd
        static let pingResponse: UInt64 = 0x348c_6752_9ef8_c7be
    }

    /// Longest close reason kept (bytes).
    public static let maxReason = 1024

    /// Decodes the frames of one record (a WebSocket message), at most `limit` bytes.
    public static func decodeRecord(_ record: Bytes, limit: Int = Int(QMuxTransportParameters.defaultMaxRecordSize))
        throws(QMuxError) -> [QMuxFrame]
    {
        guard record.count <= limit else { throw .recordTooLarge(size: record.count, limit: limit) }
        var r = WireReader(record)
        var frames: [QMuxFrame] = []
        while !r.isAtEnd {
            do {
                frames.append(try decode(&r))
            } catch let error as QMuxError {
                throw error
            } catch {
                throw .frameEncoding("\(error)")
            }
        }
        return frames
    }

    private static func decode(_ r: inout WireReader) throws -> QMuxFrame {
        let type = try r.readVarInt()
        switch type {
        case 0x00: return .padding
        case 0x04: return .resetStream(id: try r.readVarInt(), code: try r.readVarInt(), finalSize: try r.readVarInt())
        case 0x05: return .stopSending(id: try r.readVarInt(), code: try r.readVarInt())
        case 0x08...0x0f:
            let id = try r.readVarInt()
            let offset = type & 0x04 != 0 ? try r.readVarInt() : 0
            let data = type & 0x02 != 0 ? try r.readLengthPrefixedBytes(limit: r.remaining) : r.readRest()
            guard offset <= VarInt.max - UInt64(data.count) else {
                throw QMuxError.frameEncoding("stream data beyond 2^62")
            }
            return .stream(id: id, offset: offset, data: data, fin: type & 0x01 != 0)
        case 0x10: return .maxData(try r.readVarInt())
        case 0x11: return .maxStreamData(id: try r.readVarInt(), max: try r.readVarInt())
        case 0x12, 0x13: return .maxStreams(bidirectional: type == 0x12, max: try streamCount(&r))
        case 0x14: return .dataBlocked(try r.readVarInt())
        case 0x15: return .streamDataBlocked(id: try r.readVarInt(), limit: try r.readVarInt())
        case 0x16, 0x17: return .streamsBlocked(bidirectional: type == 0x16, limit: try streamCount(&r))
        case 0x1c:
            return .connectionClose(code: try r.readVarInt(), frameType: try r.readVarInt(), reason: try reason(&r))
        case 0x1d: return .applicationClose(code: try r.readVarInt(), reason: try reason(&r))
        case 0x30: return .datagram(r.readRest())
        case 0x31: return .datagram(try r.readLengthPrefixedBytes(limit: r.remaining))
        case Kind.transportParameters:
            return .transportParameters(
                try QMuxTransportParameters(decoding: try r.readLengthPrefixedBytes(limit: r.remaining)))
        case Kind.pingRequest: return .ping(try r.readVarInt())
        case Kind.pingResponse: return .pingResponse(try r.readVarInt())
        default: throw QMuxError.frameType(type)
        }
    }

    /// A stream count: at most 2^60 (RFC 9000 §19.11).
    private static func streamCount(_ r: inout WireReader) throws -> UInt64 {
        let n = try r.readVarInt()
        guard n <= 1 << 60 else { throw QMuxError.frameEncoding("stream count \(n) above 2^60") }
        return n
    }

    private static func reason(_ r: inout WireReader) throws -> String {
        let bytes = try r.readLengthPrefixedBytes(limit: r.remaining)
        return String(decoding: bytes.array.prefix(maxReason), as: UTF8.self)
    }

    /// The frame's bytes. STREAM frames carry their offset and length (type 0x0e / 0x0f), as Rust's.
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        switch self {
        case .padding: w.writeVarInt(UInt64(0))
        case .resetStream(let id, let code, let finalSize):
            for v in [0x04, id, code, finalSize] as [UInt64] { w.writeVarInt(v) }
        case .stopSending(let id, let code):
            for v in [0x05, id, code] as [UInt64] { w.writeVarInt(v) }
        case .stream(let id, let offset, let data, let fin):
            w.writeVarInt(UInt64(0x0e | (fin ? 0x01 : 0)))
            w.writeVarInt(id)
            w.writeVarInt(offset)
            w.writeVarInt(UInt64(data.count))
            w.writeBytes(data)
        case .maxData(let max): for v in [0x10, max] as [UInt64] { w.writeVarInt(v) }
        case .maxStreamData(let id, let max): for v in [0x11, id, max] as [UInt64] { w.writeVarInt(v) }
        case .maxStreams(let bidi, let max): for v in [bidi ? 0x12 : 0x13, max] as [UInt64] { w.writeVarInt(v) }
        case .dataBlocked(let limit): for v in [0x14, limit] as [UInt64] { w.writeVarInt(v) }
        case .streamDataBlocked(let id, let limit): for v in [0x15, id, limit] as [UInt64] { w.writeVarInt(v) }
        case .streamsBlocked(let bidi, let limit):
            for v in [bidi ? 0x16 : 0x17, limit] as [UInt64] { w.writeVarInt(v) }
        case .connectionClose(let code, let frameType, let reason):
            for v in [0x1c, code, frameType] as [UInt64] { w.writeVarInt(v) }
            w.writeString(String(decoding: Array(reason.utf8.prefix(Self.maxReason)), as: UTF8.self))
        case .applicationClose(let code, let reason):
            for v in [0x1d, code] as [UInt64] { w.writeVarInt(v) }
            w.writeString(String(decoding: Array(reason.utf8.prefix(Self.maxReason)), as: UTF8.self))
        case .datagram(let payload):
            w.writeVarInt(UInt64(0x31))
            w.writeVarInt(UInt64(payload.count))
            w.writeBytes(payload)
        case .transportParameters(let p):
            let blob = p.encoded()
            w.writeVarInt(Kind.transportParameters)
            w.writeVarInt(UInt64(blob.count))
            w.writeBytes(blob)
        case .ping(let seq): for v in [Kind.pingRequest, seq] { w.writeVarInt(v) }
        case .pingResponse(let seq): for v in [Kind.pingResponse, seq] { w.writeVarInt(v) }
        }
        return w.bytes
    }
}

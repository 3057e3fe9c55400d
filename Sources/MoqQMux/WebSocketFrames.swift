// SPDX-License-Identifier: MIT
public import MoqBase

/// A complete WebSocket message or control frame (RFC 6455 §5).
public enum WebSocketMessage: Sendable, Equatable {
    /// A binary message: one qmux record.
    case binary(Bytes)
    /// A text message (qmux carries none; moq-dev's peer ignores them, so do we).
    case text
    case ping(Bytes)
    case pong
    /// The peer's close frame: its status code (1005 when it sent none) and reason.
    case close(code: UInt16, reason: String)
}

/// Why WebSocket bytes were refused; the code is the close status to answer with (RFC 6455 §7.4.1).
public struct WebSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    public let closeCode: UInt16
    public let reason: String

    static func protocolError(_ reason: String) -> Self { Self(closeCode: 1002, reason: reason) }
    static func tooBig(_ size: UInt64, _ limit: Int) -> Self {
        Self(closeCode: 1009, reason: "message of \(size) bytes exceeds \(limit)")
    }

    public var description: String { "WebSocket \(closeCode): \(reason)" }
}

/// Reads WebSocket frames from a byte stream, bounded: a message (reassembled from its fragments)
/// of at most ``maxMessage`` bytes, control frames of at most 125. The server side requires masked
/// frames, the client side unmasked ones; extensions are never negotiated, so reserved bits are errors.
public struct WebSocketReader: Sendable {
    /// The largest message accepted (a qmux record: 16 382 bytes).
    public let maxMessage: Int
    /// True on the server: the client's frames must be masked.
    public let expectMasked: Bool
    private var buffer: [UInt8] = []
    private var start = 0
    /// The message being reassembled from fragments, and whether it is binary.
    private var fragments: [UInt8]?
    private var fragmentsBinary = false

    public init(maxMessage: Int = Int(QMuxTransportParameters.defaultMaxRecordSize), expectMasked: Bool) {
        self.maxMessage = maxMessage
        self.expectMasked = expectMasked
    }

    /// Bytes held (a partial frame).
    public var buffered: Int { buffer.count - start }

    /// Appends bytes read from the socket.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start * 2 >= buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message, or nil when more bytes are needed.
    public mutating func next() throws(WebSocketError) -> WebSocketMessage? {
        while true {
            guard let frame = try nextFrame() else { return nil }
            if let message = try assemble(frame) { return message }
        }
    }

    private struct Frame {
        var fin: Bool
        var opcode: UInt8
        var payload: [UInt8]
    }

    private mutating func nextFrame() throws(WebSocketError) -> Frame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let b0 = buffer[start]
        let b1 = buffer[start + 1]
        guard b0 & 0x70 == 0 else { throw .protocolError("reserved bits set (no extension was negotiated)") }
        let opcode = b0 & 0x0f
        let masked = b1 & 0x80 != 0
        guard masked == expectMasked else {
            throw .protocolError(expectMasked ? "a client frame without a mask" : "a masked server frame")
        }
        var length = UInt64(b1 & 0x7f)
        var header = 2
        if length == 126 {
            guard available >= 4 else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            header = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(buffer[start + i]) }
            guard length >> 63 == 0 else { throw .protocolError("a 64-bit length with its top bit set") }
            header = 10
        }
        let isControl = opcode & 0x08 != 0
        if isControl {
            guard length <= 125 else { throw .protocolError("a control frame of \(length) bytes") }
            guard b0 & 0x80 != 0 else { throw .protocolError("a fragmented control frame") }
        } else {
            let held = UInt64(fragments?.count ?? 0)
            guard length <= UInt64(maxMessage) - min(UInt64(maxMessage), held) else {
                throw .tooBig(held + length, maxMessage)
            }
        }
        let maskBytes = masked ? 4 : 0
        guard available >= header + maskBytes, UInt64(available - header - maskBytes) >= length else { return nil }
        let body = start + header + maskBytes
        var payload = Array(buffer[body..<(body + Int(length))])
        if masked {
            let key = Array(buffer[(start + header)..<body])
            for i in payload.indices { payload[i] ^= key[i & 3] }
        }
        start = body + Int(length)
        return Frame(fin: b0 & 0x80 != 0, opcode: opcode, payload: payload)
    }

    private mutating func assemble(_ frame: Frame) throws(WebSocketError) -> WebSocketMessage? {
        switch frame.opcode {
        case 0x0:
            guard var held = fragments else { throw .protocolError("a continuation frame without a message") }
            held += frame.payload
            guard frame.fin else {
                fragments = held
                return nil
            }
            fragments = nil
            return fragmentsBinary ? .binary(Bytes(held)) : .text
        case 0x1, 0x2:
            guard fragments == nil else { throw .protocolError("a new message inside a fragmented one") }
            guard frame.fin else {
                fragments = frame.payload
                fragmentsBinary = frame.opcode == 0x2
                return nil
            }
            return frame.opcode == 0x2 ? .binary(Bytes(frame.payload)) : .text
        case 0x8:
            guard frame.payload.count != 1 else { throw .protocolError("a close frame of one byte") }
            guard frame.payload.count >= 2 else { return .close(code: 1005, reason: "") }
            let code = UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
            return .close(code: code, reason: String(decoding: frame.payload[2...], as: UTF8.self))
        case 0x9: return .ping(Bytes(frame.payload))
        case 0xA: return .pong
        default: throw .protocolError("opcode 0x\(String(frame.opcode, radix: 16))")
        }
    }
}

/// Writes WebSocket frames; a client masks each with a fresh key (RFC 6455 §5.3).
public enum WebSocketWriter {
    public static func binary(_ payload: [UInt8], mask: [UInt8]? = nil) -> [UInt8] { frame(0x2, payload, mask) }
    public static func ping(_ payload: [UInt8], mask: [UInt8]? = nil) -> [UInt8] {
        frame(0x9, Array(payload.prefix(125)), mask)
    }
    public static func pong(_ payload: [UInt8], mask: [UInt8]? = nil) -> [UInt8] {
        frame(0xA, Array(payload.prefix(125)), mask)
    }
    public static func close(code: UInt16, reason: String, mask: [UInt8]? = nil) -> [UInt8] {
        var reasonBytes = Array(reason.utf8.prefix(123))
        // Cut on a character boundary: the reason must stay valid UTF-8.
        while !reasonBytes.isEmpty, String(validating: reasonBytes, as: UTF8.self) == nil { reasonBytes.removeLast() }
        return frame(0x8, [UInt8(code >> 8), UInt8(code & 0xff)] + reasonBytes, mask)
    }

    /// One final frame; `mask` (4 bytes) for a client's.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], _ mask: [UInt8]?) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        out.reserveCapacity(payload.count + 14)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch payload.count {
        case 0..<126: out.append(maskBit | UInt8(payload.count))
        case 126...0xffff: out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        default:
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: payload.count >> shift))
            }
        }
        guard let mask, mask.count == 4 else { return out + payload }
        out += mask
        for (i, b) in payload.enumerated() { out.append(b ^ mask[i & 3]) }
        return out
    }
}

// SPDX-License-Identifier: MIT

/// A message whose body is framed as `varint(size) + body`.
public protocol WireMessage: Sendable, Equatable {
    /// Decodes the fields from exactly the body bytes.
    static func decode(body: inout WireReader) throws(DecodeError) -> Self
    /// Appends the fields (without the size prefix).
    func encode(body: inout WireWriter)
}

extension WireMessage {
    /// The size-prefixed encoding.
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        w.writeSizePrefixed { encode(body: &$0) }
        return w.bytes
    }

    /// Decodes one size-prefixed message from `reader`, checking the size against
    /// `limit` first and that the body is consumed exactly.
    public static func decodeFramed(
        from reader: inout WireReader, limit: Int = WireLimits.maxControlMessage
    ) throws(DecodeError) -> Self {
        let size = try reader.readLength(limit: limit)
        var body = WireReader(try reader.readBytes(count: size))
        let message = try decode(body: &body)
        try body.expectEnd()
        return message
    }
}

/// Helpers for messages framed as `varint(type) + varint(size) + body`.
public enum TypedFrame {
    /// Reads a type and a size-checked body. Returns the type and a reader over the body.
    public static func read(
        from reader: inout WireReader, limit: Int = WireLimits.maxControlMessage
    ) throws(DecodeError) -> (type: UInt64, body: WireReader) {
        let type = try reader.readVarInt()
        let size = try reader.readLength(limit: limit)
        return (type, WireReader(try reader.readBytes(count: size)))
    }

    /// Appends `type, size, body`.
    public static func write(type: UInt64, into w: inout WireWriter, _ body: (inout WireWriter) -> Void) {
        w.writeVarInt(type)
        w.writeSizePrefixed(body)
    }
}

extension WireReader {
    /// Reads an optional "+1" value: 0 is absent, otherwise value − 1.
    public mutating func readOptionalPlusOne() throws(DecodeError) -> UInt64? {
        let v = try readVarInt()
        return v == 0 ? nil : v - 1
    }
}

extension WireWriter {
    /// Writes an optional "+1" value: absent is 0, otherwise value + 1. The largest value
    /// that can be written this way is 2^62 − 2; anything above saturates to it (a bound at
    /// the varint ceiling means "no bound" in practice, and must never trap).
    public mutating func writeOptionalPlusOne(_ value: UInt64?) {
        writeVarInt(value.map { VarInt.saturatingAdd(Swift.min($0, VarInt.max - 1), 1) } ?? 0)
    }
}

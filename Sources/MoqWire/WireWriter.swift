// SPDX-License-Identifier: MIT

/// Appends wire fields to a growing byte array.
public struct WireWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// An empty writer.
    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends a minimal QUIC varint.
    @inlinable public mutating func writeVarInt(_ value: UInt64) { VarInt.encode(value, into: &bytes) }

    /// Appends a varint from an `Int` (a negative value, which no caller passes, is written as 0).
    @inlinable public mutating func writeVarInt(_ value: Int) { writeVarInt(UInt64(clamping: value)) }

    /// Appends one raw byte.
    @inlinable public mutating func writeUInt8(_ value: UInt8) { bytes.append(value) }

    /// Appends raw bytes.
    public mutating func writeBytes(_ value: Bytes) { value.withUnsafeBytes { bytes.append(contentsOf: $0) } }

    /// Appends raw bytes.
    public mutating func writeBytes(_ value: [UInt8]) { bytes.append(contentsOf: value) }

    /// Appends a varint length and the UTF-8 bytes of `value`.
    public mutating func writeString(_ value: String) {
        let utf8 = Array(value.utf8)
        writeVarInt(utf8.count)
        bytes.append(contentsOf: utf8)
    }

    /// Appends `varint(size) + body`, where `body` writes the message fields.
    public mutating func writeSizePrefixed(_ body: (inout WireWriter) -> Void) {
        var inner = WireWriter()
        body(&inner)
        writeVarInt(inner.bytes.count)
        bytes.append(contentsOf: inner.bytes)
    }

    /// The bytes as an immutable view.
    public var view: Bytes { Bytes(bytes) }
}

// SPDX-License-Identifier: MIT

/// A cursor over received bytes. Reads past the end throw ``DecodeError/short``.
/// Byte fields are returned as slices of the same storage: nothing is copied.
public struct WireReader: Sendable {
    /// The bytes being read.
    public let bytes: Bytes
    /// The index of the next byte to read.
    public private(set) var position: Int

    /// A reader positioned at the first byte of `bytes`.
    public init(_ bytes: Bytes) {
        self.bytes = bytes
        position = 0
    }

    /// Bytes not yet read.
    @inlinable public var remaining: Int { bytes.count - position }

    /// True when every byte has been read.
    @inlinable public var isAtEnd: Bool { remaining == 0 }

    /// Reads one QUIC varint (non-minimal encodings are accepted, as the Rust peer does).
    public mutating func readVarInt() throws(DecodeError) -> UInt64 {
        guard remaining >= 1 else { throw .short }
        let first = bytes[position]
        let length = VarInt.length(firstByte: first)
        guard remaining >= length else { throw .short }
        var value = UInt64(first & 0x3f)
        for i in 1..<length {
            value = value << 8 | UInt64(bytes[position + i])
        }
        position += length
        return value
    }

    /// Reads a varint that must fit in `Int` and be at most `limit`.
    public mutating func readLength(limit: Int) throws(DecodeError) -> Int {
        let value = try readVarInt()
        guard value <= UInt64(limit) else { throw .tooLarge(size: value, limit: limit) }
        return Int(value)
    }

    /// Reads a single raw byte.
    public mutating func readUInt8() throws(DecodeError) -> UInt8 {
        guard remaining >= 1 else { throw .short }
        defer { position += 1 }
        return bytes[position]
    }

    /// Reads exactly `count` bytes as a shared slice.
    public mutating func readBytes(count: Int) throws(DecodeError) -> Bytes {
        guard remaining >= count else { throw .short }
        defer { position += count }
        return bytes[position..<position + count]
    }

    /// Reads a varint length and that many bytes, refusing lengths over `limit`.
    public mutating func readLengthPrefixedBytes(limit: Int) throws(DecodeError) -> Bytes {
        let count = try readLength(limit: limit)
        return try readBytes(count: count)
    }

    /// Reads a varint length and a UTF-8 string of that many bytes.
    public mutating func readString(limit: Int = WireLimits.maxString) throws(DecodeError) -> String {
        let raw = try readLengthPrefixedBytes(limit: limit)
        let decoded: String? = raw.withUnsafeBytes { String(validating: $0, as: UTF8.self) }
        guard let decoded else { throw .invalidString }
        return decoded
    }

    /// Reads every remaining byte.
    public mutating func readRest() -> Bytes {
        defer { position = bytes.count }
        return bytes[position..<bytes.count]
    }

    /// Throws ``DecodeError/trailingBytes(_:)`` unless every byte was read.
    public func expectEnd() throws(DecodeError) {
        if remaining != 0 { throw .trailingBytes(remaining) }
    }
}

// SPDX-License-Identifier: MIT

/// QUIC variable-length integers (RFC 9000 §16): the top two bits of the first
/// byte give the length (1, 2, 4 or 8 bytes), big-endian, values below 2^62.
public enum VarInt {
    /// The largest encodable value, 2^62 − 1.
    public static let max: UInt64 = (1 << 62) - 1

    /// The number of bytes of the minimal encoding of `value`.
    @inlinable public static func size(of value: UInt64) -> Int {
        switch value {
        case ..<(1 << 6): 1
        case ..<(1 << 14): 2
        case ..<(1 << 30): 4
        default: 8
        }
    }

    /// The encoded length announced by a first byte.
    @inlinable public static func length(firstByte: UInt8) -> Int { 1 << Int(firstByte >> 6) }

    /// The varint at `offset` of `bytes` and its encoded length, without consuming anything; nil
    /// while it is incomplete (the incremental readers look at a header before its body arrives).
    public static func peek(_ bytes: [UInt8], at offset: Int) -> (value: UInt64, length: Int)? {
        guard offset >= 0, offset < bytes.count else { return nil }
        let length = length(firstByte: bytes[offset])
        guard offset + length <= bytes.count else { return nil }
        var value = UInt64(bytes[offset] & 0x3f)
        for i in 1..<length { value = value << 8 | UInt64(bytes[offset + i]) }
        return (value, length)
    }

    /// True when `value` fits a varint (≤ ``max``).
    @inlinable public static func isEncodable(_ value: UInt64) -> Bool { value <= max }

    /// Appends the minimal encoding of `value`. Never traps: a value above ``max`` (which
    /// only arithmetic on values near the ceiling can produce: a relayed cost plus the link
    /// cost, an exclusive end after group 2^62−1) is written as ``max``. Callers saturate
    /// such sums on purpose (``saturatingAdd(_:_:)``); this clamp is the last line of defence.
    @inlinable public static func encode(_ value: UInt64, into out: inout [UInt8]) {
        let value = Swift.min(value, max)
        switch size(of: value) {
        case 1:
            out.append(UInt8(value))
        case 2:
            out.append(UInt8(value >> 8) | 0x40)
            out.append(UInt8(truncatingIfNeeded: value))
        case 4:
            out.append(UInt8(value >> 24) | 0x80)
            out.append(UInt8(truncatingIfNeeded: value >> 16))
            out.append(UInt8(truncatingIfNeeded: value >> 8))
            out.append(UInt8(truncatingIfNeeded: value))
        default:
            out.append(UInt8(value >> 56) | 0xc0)
            for shift in stride(from: 48, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
        }
    }

    /// `a + b`, saturating at ``max`` (never traps, never leaves the varint range).
    @inlinable public static func saturatingAdd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? max : Swift.min(sum, max)
    }

    /// Zigzag-encodes a signed delta: `(s << 1) ^ (s >> 63)`.
    @inlinable public static func zigzag(_ s: Int64) -> UInt64 {
        UInt64(bitPattern: (s << 1) ^ (s >> 63))
    }

    /// Inverse of ``zigzag(_:)``.
    @inlinable public static func unzigzag(_ u: UInt64) -> Int64 {
        Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }
}

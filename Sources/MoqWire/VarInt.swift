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

    /// Appends the minimal encoding of `value` (which must be ≤ ``max``).
    @inlinable public static func encode(_ value: UInt64, into out: inout [UInt8]) {
        precondition(value <= max, "varint out of range")
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

    /// Zigzag-encodes a signed delta: `(s << 1) ^ (s >> 63)`.
    @inlinable public static func zigzag(_ s: Int64) -> UInt64 {
        UInt64(bitPattern: (s << 1) ^ (s >> 63))
    }

    /// Inverse of ``zigzag(_:)``.
    @inlinable public static func unzigzag(_ u: UInt64) -> Int64 {
        Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }
}

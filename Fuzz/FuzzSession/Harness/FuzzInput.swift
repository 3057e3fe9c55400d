// SPDX-License-Identifier: MIT

/// Fuzzer bytes read as choices. Every read succeeds: past the end it returns zeros,
/// so any input is a valid script (and a shorter input a shorter one).
struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A value in `0..<upper` (upper ≤ 256 uses one byte, more uses two).
    mutating func int(_ upper: Int) -> Int {
        guard upper > 1 else { return 0 }
        if upper <= 256 { return Int(byte()) % upper }
        return (Int(byte()) << 8 | Int(byte())) % upper
    }

    /// Varint values that matter: the edges of each encoding length, the ceiling and around it.
    static let interesting: [UInt64] = [
        0, 1, 2, 3, 63, 64, 127, 255, 16_383, 16_384, (1 << 30) - 1, 1 << 30, (1 << 32) - 1, 1 << 32, 1 << 53,
        (1 << 61) - 1, 1 << 61, (1 << 62) - 2, (1 << 62) - 1,
    ]

    /// A varint-range value: an interesting one, a small one, or eight raw bytes masked to 62 bits.
    mutating func value() -> UInt64 {
        switch byte() % 4 {
        case 0, 1: return Self.interesting[int(Self.interesting.count)]
        case 2: return UInt64(byte())
        default:
            var v: UInt64 = 0
            for _ in 0..<8 { v = v << 8 | UInt64(byte()) }
            return v & ((1 << 62) - 1)
        }
    }

    /// Up to `max` raw bytes.
    mutating func bytes(max: Int) -> [UInt8] {
        let count = int(max + 1)
        return (0..<count).map { _ in byte() }
    }

    /// A path or name: ones the origin knows, edge cases, or raw text.
    mutating func name() -> String {
        switch byte() % 12 {
        case 0: return "b"
        case 1: return "t"
        case 2: return ""
        case 3: return "b/t"
        case 4: return "/b//"
        case 5: return ".hidden/b"
        case 6: return "d"
        case 7: return "x" + String(int(64))
        case 8: return String(repeating: "a/", count: int(64))
        case 9: return String(repeating: "z", count: int(2048))
        case 10: return "caf\u{E9}"
        default: return String(decoding: bytes(max: 16), as: UTF8.self)
        }
    }
}

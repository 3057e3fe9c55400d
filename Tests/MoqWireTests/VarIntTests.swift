// SPDX-License-Identifier: MIT
import MoqWire
import Testing

@Suite struct VarIntTests {
    static let vectors: [(UInt64, String)] = [
        (0, "00"), (63, "3f"), (64, "40 40"), (5000, "53 88"), (16383, "7f ff"),
        (16384, "80 00 40 00"), (1_000_000, "80 0f 42 40"), ((1 << 30) - 1, "bf ff ff ff"),
        (1 << 30, "c0 00 00 00 40 00 00 00"), (VarInt.max, "ff ff ff ff ff ff ff ff"),
    ]

    @Test(arguments: vectors)
    func encodesMinimally(value: UInt64, expected: String) throws {
        var out: [UInt8] = []
        VarInt.encode(value, into: &out)
        #expect(out == hex(expected))
        var r = reader(out)
        #expect(try r.readVarInt() == value)
        #expect(r.isAtEnd)
    }

    @Test func acceptsNonMinimalEncodings() throws {
        var r = reader(hex("40 01  80 00 00 00  c0 00 00 00 00 00 00 05"))
        #expect(try r.readVarInt() == 1)
        #expect(try r.readVarInt() == 0)
        #expect(try r.readVarInt() == 5)
    }

    @Test func truncatedIsShort() {
        var r = reader(hex("c0 00 00 00 00 00 00"))
        #expect(throws: DecodeError.short) { try r.readVarInt() }
        var empty = reader([])
        #expect(throws: DecodeError.short) { try empty.readVarInt() }
    }

    @Test(arguments: [Int64(0), 1, -1, 33333, -33333, 99999, Int64.max, Int64.min])
    func zigzagRoundTrips(value: Int64) {
        #expect(VarInt.unzigzag(VarInt.zigzag(value)) == value)
    }

    @Test func zigzagMatchesReference() {
        #expect(VarInt.zigzag(33333) == 66666)
        #expect(VarInt.zigzag(99999) == 199_998)
        #expect(VarInt.zigzag(-1) == 1)
    }

    @Test func lengthLimitIsCheckedBeforeReading() {
        var r = reader(hex("80 01 00 00"))  // declares 65536 bytes, none present
        #expect(throws: DecodeError.tooLarge(size: 65536, limit: 1024)) { try r.readLength(limit: 1024) }
    }
}

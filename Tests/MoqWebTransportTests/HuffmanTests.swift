// SPDX-License-Identifier: MIT
import Testing

@testable import MoqWebTransport

@Suite("Huffman (RFC 7541 Appendix B)")
struct HuffmanTests {
    static func hex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var chars = Array(text.filter { !$0.isWhitespace })[...]
        while chars.count >= 2 {
            out.append(UInt8(String(chars.prefix(2)), radix: 16)!)
            chars = chars.dropFirst(2)
        }
        return out
    }

    /// The RFC's own examples (C.4.1–C.4.3, C.6.1).
    static let vectors: [(String, String)] = [
        ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
        ("no-cache", "a8eb 1064 9cbf"),
        ("custom-key", "25a8 49e9 5ba9 7d7f"),
        ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
        ("302", "6402"),
        ("private", "aec3 771a 4b"),
        ("Mon, 21 Oct 2013 20:13:21 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"),
        ("https://www.example.com", "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3"),
    ]

    @Test("the RFC's examples encode and decode", arguments: vectors)
    func rfcVectors(text: String, encoded: String) throws {
        #expect(Huffman.encode(Array(text.utf8)) == Self.hex(encoded))
        #expect(try Huffman.decode(Self.hex(encoded), limit: 100) == Array(text.utf8))
        #expect(Huffman.encodedCount(Array(text.utf8)) == Self.hex(encoded).count)
    }

    @Test("every byte value round-trips, alone and together")
    func everyByte() throws {
        let all = (0...255).map { UInt8($0) }
        #expect(try Huffman.decode(Huffman.encode(all), limit: 256) == all)
        for b in all { #expect(try Huffman.decode(Huffman.encode([b]), limit: 1) == [b]) }
    }

    @Test("padding longer than 7 bits, padding with a zero, EOS inside, and overlong output are refused")
    func invalid() throws {
        // "0" is 00000 (5 bits): padding of 3 ones is right; a whole byte of ones after it is not.
        #expect(throws: Huffman.DecodeError.invalidPadding) { try Huffman.decode([0b0000_0111, 0xff], limit: 10) }
        #expect(throws: Huffman.DecodeError.invalidPadding) { try Huffman.decode([0b0000_0101], limit: 10) }
        // EOS (30 ones) is no symbol of a string.
        #expect(throws: Huffman.DecodeError.invalidCode) { try Huffman.decode([0xff, 0xff, 0xff, 0xff], limit: 10) }
        #expect(throws: Huffman.DecodeError.tooLong) {
            try Huffman.decode(Huffman.encode(Array("abcdef".utf8)), limit: 5)
        }
        #expect(try Huffman.decode([], limit: 0) == [])
    }
}

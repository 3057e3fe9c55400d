// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import Testing

@testable import MoqWebTransport

@Suite("QPACK: static table and literals, against ls-qpack", .peersStopped)
struct QPACKTests {
    static let connect = WebTransportConnect.Request(
        authority: "relay.example:4443", path: "/anon/room?jwt=eyJhbGciOiJIUzI1NiJ9.e30.sig",
        protocols: ["moq-lite-06", "moq-lite-05"], origin: "https://watch.example")

    @Test("a CONNECT and a 200 round-trip through our encoder and decoder")
    func roundTrip() throws {
        let fields = Self.connect.fields
        #expect(try QPACK.decode(QPACK.encode(fields)) == fields)
        let response = WebTransportConnect.Response(status: 200, selectedProtocol: "moq-lite-06")
        #expect(try QPACK.decode(QPACK.encode(response.fields)) == response.fields)
        // Static table hits are one byte each: :method CONNECT (15), :scheme https (23), :status 200 (25).
        #expect(QPACK.encode([HTTPField(":method", "CONNECT")]) == [0, 0, 0xc0 | 15])
        #expect(QPACK.encode([HTTPField(":status", "200")]) == [0, 0, 0xc0 | 25])
    }

    @Test("ls-qpack decodes what we encode, and we decode what it encodes (Huffman included)")
    func againstLsQpack() async throws {
        let fields = Self.connect.fields + [HTTPField("x-custom", String(repeating: "value ", count: 20))]
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: fields.map { [$0.name, $0.value] }), as: UTF8.self)
        let encoder = try RustPeer.launch(["encode", json], script: "qpack_oracle.py")
        let encoded = try await encoder.waitFor(event: "result", timeout: .seconds(20))
        let theirs = try #require(encoded.string("hex"))
        #expect(try QPACK.decode(HuffmanTests.hex(theirs)) == fields)

        let ours = QPACK.encode(fields).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let decoder = try RustPeer.launch(["decode", ours], script: "qpack_oracle.py")
        let decoded = try await decoder.waitFor(event: "result", timeout: .seconds(20))
        #expect(decoded.string("error") == nil)
        #expect(decoded.string("fields") == fields.map(\.description).joined(separator: "\n"))
    }

    @Test("references to the dynamic table, bad indices, truncation and floods are refused")
    func hostile() {
        // Required Insert Count 1: a dynamic table we never allowed.
        #expect(throws: QPACK.DecodeError.dynamicTableReference) { try QPACK.decode([1, 0]) }
        // Indexed field line with T=0 (dynamic), post-base forms.
        #expect(throws: QPACK.DecodeError.dynamicTableReference) { try QPACK.decode([0, 0, 0x80]) }
        #expect(throws: QPACK.DecodeError.dynamicTableReference) { try QPACK.decode([0, 0, 0x10]) }
        #expect(throws: QPACK.DecodeError.dynamicTableReference) { try QPACK.decode([0, 0, 0x00]) }
        // Static index 99 is past the table (0…98): 0xc0|63 then 36.
        #expect(throws: QPACK.DecodeError.staticIndexOutOfRange(99)) { try QPACK.decode([0, 0, 0xff, 36]) }
        // A length beyond the section, an integer past 2^32.
        #expect(throws: QPACK.DecodeError.truncated) { try QPACK.decode([0, 0, 0x51, 0x05, 0x61]) }
        #expect(throws: QPACK.DecodeError.integerOverflow) {
            try QPACK.decode([0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
        }
        #expect(throws: QPACK.DecodeError.truncated) { try QPACK.decode([0]) }
        // 65 fields: more than a section may carry.
        let flood = [UInt8](repeating: 0xc0 | 17, count: 65)
        #expect(throws: QPACK.DecodeError.tooLarge) { try QPACK.decode([0, 0] + flood) }
        // A literal value longer than the section budget.
        var big: [UInt8] = [0, 0]
        QPACK.encodeInteger(0, prefixBits: 4, flags: 0x50, into: &big)
        QPACK.encodeInteger(UInt64(QPACK.maxSectionBytes + 1), prefixBits: 7, flags: 0, into: &big)
        big += [UInt8](repeating: 0x61, count: QPACK.maxSectionBytes + 1)
        #expect(throws: QPACK.DecodeError.tooLarge) { try QPACK.decode(big) }
    }
}

// SPDX-License-Identifier: MIT
// TLS over a byte stream without I/O (the carrier of wss:// and HTTPS on a relay's TCP port):
// a client and a server layer exchange their ciphertext in memory.
import MoqBase
import Testing

@testable import MoqQUIC

@Suite struct TLSRecordLayerTests {
    static let identity = Result { try ServerIdentity(.selfSigned(names: ["localhost", "127.0.0.1"])) }

    /// Moves ciphertext both ways until neither side has any left; returns the plaintext each received.
    static func pump(_ client: TLSRecordLayer, _ server: TLSRecordLayer) throws -> (client: [UInt8], server: [UInt8]) {
        var toClient: [UInt8] = []
        var toServer: [UInt8] = []
        for _ in 0..<32 {
            let c = client.takeOutput()
            if !c.isEmpty { toServer += try c.withUnsafeBytes { try server.receive($0) } }
            let s = server.takeOutput()
            if !s.isEmpty { toClient += try s.withUnsafeBytes { try client.receive($0) } }
            if c.isEmpty && s.isEmpty { break }
        }
        return (toClient, toServer)
    }

    static func pinned(_ fingerprint: String) -> TLSClientConfiguration {
        TLSClientConfiguration(verification: .fingerprints([Hex.decode(fingerprint) ?? []]))
    }

    @Test("a pinned client and a server finish the handshake and carry data both ways, in records of any size")
    func handshakeAndData() throws {
        let identity = try Self.identity.get()
        let server = try TLSRecordLayer(server: identity)
        let client = try TLSRecordLayer(client: Self.pinned(identity.fingerprint), host: "127.0.0.1")
        try client.start()
        _ = try Self.pump(client, server)
        #expect(client.isEstablished && server.isEstablished)
        #expect(client.selectedALPN == "http/1.1")
        let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try client.send(big)
        try server.send(Array("hello".utf8))
        let (atClient, atServer) = try Self.pump(client, server)
        #expect(atServer == big)
        #expect(atClient == Array("hello".utf8))
        // Ciphertext cut into single bytes still yields the same plaintext.
        try client.send(Array("one byte at a time".utf8))
        var got: [UInt8] = []
        for byte in client.takeOutput() { got += try [byte].withUnsafeBytes { try server.receive($0) } }
        #expect(got == Array("one byte at a time".utf8))
        client.closeNotify()
        _ = try Self.pump(client, server)
        #expect(server.peerClosed)
    }

    @Test("the system CAs refuse a self-signed server, and a wrong pin is refused naming both fingerprints")
    func refusedCertificates() throws {
        let identity = try Self.identity.get()
        for (tls, expected) in [
            (TLSClientConfiguration(verification: .system, serverName: "localhost"), "not trusted"),
            (Self.pinned(String(repeating: "ab", count: 32)), "fingerprint mismatch"),
        ] {
            let server = try TLSRecordLayer(server: identity)
            let client = try TLSRecordLayer(client: tls, host: "localhost")
            try client.start()
            var refusal: String?
            do {
                _ = try Self.pump(client, server)
            } catch {
                refusal = "\(error)"
            }
            #expect(refusal?.contains(expected) == true, "\(refusal ?? "accepted")")
            #expect(refusal?.contains(identity.fingerprint) == true)
            #expect(!client.isEstablished)
            #expect(throws: QUICError.self) { try client.send([1]) }
        }
    }

    @Test("hostile bytes: garbage, a truncated hello and an oversized record end the session with an error, not a trap")
    func hostileInput() throws {
        let identity = try Self.identity.get()
        var random = SeededGenerator(seed: 7)
        let inputs: [[UInt8]] = [
            (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) },
            [0x16, 0x03, 0x01, 0xff, 0xff] + [UInt8](repeating: 0, count: 70_000),
            [0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00],
            [0x17, 0x03, 0x03, 0x40, 0x01] + [UInt8](repeating: 0x41, count: 16_385),
        ]
        for input in inputs {
            let server = try TLSRecordLayer(server: identity)
            #expect(throws: QUICError.self) {
                _ = try input.withUnsafeBytes { try server.receive($0) }
                _ = try [UInt8](repeating: 0, count: 64).withUnsafeBytes { try server.receive($0) }
            }
            #expect(!server.isEstablished)
        }
        // A client given a server's garbage fails as well.
        let client = try TLSRecordLayer(client: Self.pinned(identity.fingerprint), host: "localhost")
        try client.start()
        _ = client.takeOutput()
        #expect(throws: QUICError.self) { _ = try inputs[0].withUnsafeBytes { try client.receive($0) } }
    }
}

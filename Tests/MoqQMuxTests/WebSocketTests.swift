// SPDX-License-Identifier: MIT
import MoqBase
import Testing

@testable import MoqQMux

@Suite("WebSocket carrier (RFC 6455)")
struct WebSocketTests {
    @Test("SHA-1 and Base64 against their standards' vectors; the accept value of RFC 6455's example")
    func digests() {
        let abc = SHA1.digest(Array("abc".utf8)).map {
            String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
        }
        #expect(abc.joined() == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(SHA1.digest([]).prefix(4) == [0xda, 0x39, 0xa3, 0xee])
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(SHA1.digest(long).prefix(4) == [0x84, 0x98, 0x3e, 0x44])
        #expect(Base64.encode(Array("foob".utf8)) == "Zm9vYg==" && Base64.encode(Array("fooba".utf8)) == "Zm9vYmE=")
        #expect(Base64.decode("Zm9vYmFy") == Array("foobar".utf8) && Base64.decode("Zm9vYg==") == Array("foob".utf8))
        #expect(Base64.decode("Zm9v!mFy") == nil && Base64.decode("Zm9") == nil && Base64.decode("Z===") == nil)
        #expect(WebSocketHandshake.acceptValue(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    static let upgrade = [
        "upgrade": "websocket", "connection": "keep-alive, Upgrade", "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-protocol":
            "qmux-02.moq-lite-06, qmux-01.moq-lite-06, qmux-00.moq-lite-06, qmux-01, webtransport",
    ]

    @Test("the upgrade moq-dev's client sends picks qmux-01.moq-lite-06, and the answer is what it checks")
    func upgradeAccepted() throws {
        let upgrade = try WebSocketHandshake.check(headers: Self.upgrade).get()
        #expect(upgrade.selectedProtocol == "qmux-01.moq-lite-06")
        let text = String(decoding: WebSocketHandshake.response(upgrade), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n") && text.hasSuffix("\r\n\r\n"))
        #expect(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(text.contains("Sec-WebSocket-Protocol: qmux-01.moq-lite-06\r\n"))
        let headers = [
            "sec-websocket-accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "sec-websocket-protocol": "qmux-01.moq-lite-06",
        ]
        #expect(
            WebSocketHandshake.checkResponse(status: 101, headers: headers, key: "dGhlIHNhbXBsZSBub25jZQ==")
                == .success("qmux-01.moq-lite-06"))
    }

    @Test(
        "an upgrade without the protocol, with none we speak, of another version, with a bad key: refused with what to fix"
    )
    func upgradeRefused() {
        func refusal(_ change: (inout [String: String]) -> Void) -> WebSocketHandshake.UpgradeRefusal? {
            var headers = Self.upgrade
            change(&headers)
            guard case .failure(let r) = WebSocketHandshake.check(headers: headers) else { return nil }
            return r
        }
        let none = refusal { $0["sec-websocket-protocol"] = nil }
        #expect(none?.status == 400 && none?.reason.contains("qmux-01.moq-lite-06") == true)
        #expect(refusal { $0["sec-websocket-protocol"] = "qmux-01.moq-lite-05, webtransport" }?.status == 400)
        #expect(refusal { $0["sec-websocket-version"] = "8" }?.status == 426)
        #expect(refusal { $0["sec-websocket-key"] = "c2hvcnQ=" }?.status == 400)
        #expect(refusal { $0["upgrade"] = nil }?.status == 400)
        #expect(refusal { $0["connection"] = "keep-alive" }?.status == 400)
        // A server that answers without a protocol, or with one not offered, is refused by the client.
        let key = "dGhlIHNhbXBsZSBub25jZQ=="
        let accept = ["sec-websocket-accept": WebSocketHandshake.acceptValue(key: key)]
        #expect((try? WebSocketHandshake.checkResponse(status: 101, headers: accept, key: key).get()) == nil)
        #expect((try? WebSocketHandshake.checkResponse(status: 401, headers: [:], key: key).get()) == nil)
    }

    /// RFC 6455 §5.7: a masked "Hello" from a client.
    static let maskedHello: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]

    static func read(_ bytes: [UInt8], server: Bool = true, maxMessage: Int = 16_382, chunk: Int = .max) throws
        -> [WebSocketMessage]
    {
        var reader = WebSocketReader(maxMessage: maxMessage, expectMasked: server)
        var out: [WebSocketMessage] = []
        for start in stride(from: 0, to: bytes.count, by: min(chunk, max(1, bytes.count))) {
            bytes[start..<min(bytes.count, start + chunk)].withUnsafeBytes { reader.append($0) }
            while let m = try reader.next() { out.append(m) }
        }
        return out
    }

    @Test("frames: masked and not, 7/16/64-bit lengths, fragments reassembled, fed a byte at a time")
    func frames() throws {
        #expect(try Self.read(Self.maskedHello) == [.text])
        let mask: [UInt8] = [1, 2, 3, 4]
        for size in [0, 125, 126, 300, 16_382] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
            #expect(try Self.read(WebSocketWriter.binary(payload, mask: mask)) == [.binary(Bytes(payload))])
            #expect(
                try Self.read(WebSocketWriter.binary(payload), server: false, chunk: 7) == [.binary(Bytes(payload))])
        }
        // A 64-bit length (127) carrying a small payload is legal.
        #expect(try Self.read([0x82, 127, 0, 0, 0, 0, 0, 0, 0, 2, 9, 9], server: false) == [.binary(Bytes([9, 9]))])
        // A binary message in three fragments with a ping between them.
        let fragmented: [UInt8] = [0x02, 2, 1, 2] + [0x89, 1, 7] + [0x00, 1, 3] + [0x80, 2, 4, 5]
        #expect(
            try Self.read(fragmented, server: false, chunk: 1) == [.ping(Bytes([7])), .binary(Bytes([1, 2, 3, 4, 5]))])
        #expect(
            try Self.read(WebSocketWriter.close(code: 1000, reason: "bye"), server: false)
                == [.close(code: 1000, reason: "bye")])
        #expect(try Self.read([0x88, 0], server: false) == [.close(code: 1005, reason: "")])
        #expect(try Self.read(WebSocketWriter.pong([1]), server: false) == [.pong])
    }

    @Test("hostile frames: each refused with its close code, nothing buffered past the limit")
    func hostile() {
        func code(_ bytes: [UInt8], server: Bool = false, maxMessage: Int = 16_382) -> UInt16? {
            do {
                _ = try Self.read(bytes, server: server, maxMessage: maxMessage)
                return nil
            } catch let error as WebSocketError {
                return error.closeCode
            } catch {
                return nil
            }
        }
        #expect(code([0x82, 5, 1, 2, 3, 4, 5], server: true) == 1002)  // unmasked from a client
        #expect(code(Self.maskedHello, server: false) == 1002)  // masked from a server
        #expect(code([0xC2, 0]) == 1002)  // RSV1 without an extension
        #expect(code([0x83, 0]) == 1002)  // reserved opcode
        #expect(code([0x89, 126, 0, 126] + [UInt8](repeating: 0, count: 126)) == 1002)  // a 126-byte ping
        #expect(code([0x09, 0]) == 1002)  // a fragmented ping
        #expect(code([0x80, 0]) == 1002)  // a continuation without a message
        #expect(code([0x02, 1, 1, 0x82, 1, 1]) == 1002)  // a new message inside a fragmented one
        #expect(code([0x88, 1, 3]) == 1002)  // a one-byte close
        // Too big, by its header alone (nothing of it is buffered), at the varint-like ceilings too.
        #expect(code([0x82, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) == 1009)
        #expect(code([0x82, 127, 0xff, 0, 0, 0, 0, 0, 0, 0]) == 1002)
        #expect(code([0x82, 126, 0x40, 0x00], maxMessage: 16_382) == 1009)
        // Fragments that together pass the limit.
        #expect(code([0x02, 126, 0x20, 0x00] + [UInt8](repeating: 0, count: 8_192) + [0x80, 126, 0x20, 0x00]) == 1009)
    }
}

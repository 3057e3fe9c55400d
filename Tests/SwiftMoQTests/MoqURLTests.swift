// SPDX-License-Identifier: MIT
import SwiftMoQ
import Testing

@Suite struct MoqURLTests {
    @Test func pathAndQueryGoToSetup() throws {
        let url = try MoqURL("moql://Relay.Example:4443/anon/room?jwt=abc")
        #expect(url.host == "relay.example")
        #expect(url.port == 4443)
        #expect(url.path == "/anon/room")
        #expect(url.query == "jwt=abc")
        #expect(url.setupPath == "/anon/room?jwt=abc")
        #expect(url.redacted == "moql://relay.example:4443/anon/room")
    }

    @Test func defaultsAndSynonyms() throws {
        let url = try MoqURL("moqt://127.0.0.1")
        #expect(url.port == MoqURL.defaultPort)
        #expect(url.setupPath == "/")
        let v6 = try MoqURL("moql://[::1]:9000/x")
        #expect(v6.host == "::1")
        #expect(v6.port == 9000)
        #expect(v6.description == "moql://[::1]:9000/x")
    }

    @Test("https:// and http:// are WebTransport, with their schemes' default ports; http:// fetches the hash")
    func webTransportSchemes() throws {
        let https = try MoqURL("https://Relay.example/anon?jwt=t")
        #expect(https.isWebTransport && !https.fetchesCertificateHash)
        #expect(https.port == 443 && https.authority == "relay.example:443" && https.setupPath == "/anon?jwt=t")
        let http = try MoqURL("http://[::1]:4443/anon")
        #expect(http.isWebTransport && http.fetchesCertificateHash && http.port == 4443)
        #expect(http.certificateHashURL == "http://[::1]:4443/certificate.sha256")
        #expect(try MoqURL("http://localhost/").port == 80)
        #expect(try !MoqURL("moql://h/").isWebTransport && MoqURL("moql://h/").port == 4443)
    }

    @Test("ws:// and wss:// are WebSocket URLs; a fallback keeps host, port, path and query, and TLS for https://")
    func webSocketSchemes() throws {
        let wss = try MoqURL("wss://Relay.example/anon?jwt=t")
        #expect(wss.isWebSocket && wss.isSecureWebSocket && !wss.isWebTransport && wss.port == 443)
        let ws = try MoqURL("ws://127.0.0.1:4443/anon")
        #expect(ws.isWebSocket && !ws.isSecureWebSocket && ws.port == 4443)
        #expect(try MoqURL("ws://h/").port == 80)
        #expect(try MoqURL("https://h:9/a?jwt=t").webSocketURL.description == "wss://h:9/a?jwt=t")
        #expect(try MoqURL("http://h:9/a").webSocketURL.description == "ws://h:9/a")
    }

    @Test func tokensAreAppended() throws {
        #expect(try MoqURL("moql://h:1/a").addingToken("t").setupPath == "/a?jwt=t")
        #expect(try MoqURL("moql://h:1/a?x=1").addingToken("t").setupPath == "/a?x=1&jwt=t")
    }

    @Test(
        arguments: [
            ("relay.example:4443", "not a URL"), ("ftp://relay.example/", "https://host:port/path (WebTransport)"),
            ("quic://h:1/", "unsupported scheme"),
            ("moql://:4443/", "host is missing"), ("moql://h:0/", "not a valid port"),
            ("moql://h:99999/", "not a valid port"),
            ("moql://user@h:1/", "credentials"),
        ] as [(String, String)])
    func badURLsSayWhatIsWrong(text: String, expected: String) {
        #expect {
            _ = try MoqURL(text)
        } throws: { error in
            guard let e = error as? MoqError, case .invalidURL(let message) = e else { return false }
            return message.contains(expected)
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqPlayback
import SwiftMoQ
import Testing

@Suite("PlaybackURI: connection root and broadcast from one URI")
struct PlaybackURITests {
    @Test(
        "the first segment is the root, the rest the broadcast",
        arguments: [
            ("moql://relay:4443/anon/room/cam", "moql://relay:4443/anon", "room/cam"),
            ("moql://relay/anon/a/b/c", "moql://relay:4443/anon", "a/b/c"),
            ("moql://relay:4443/cam", "moql://relay:4443/", "cam"),
            ("moqt://[::1]:5000/anon/cam", "moqt://[::1]:5000/anon", "cam"),
            ("moql://relay/anon/room%20one/cam", "moql://relay:4443/anon", "room one/cam"),
        ])
    func split(uri: String, url: String, broadcast: String) throws {
        let parsed = try PlaybackURI(uri)
        #expect(parsed.url == url)
        #expect(parsed.broadcast == broadcast)
        #expect(parsed.prefix == nil)
    }

    @Test("?broadcast= or ?prefix= keep the whole path as the connection path; other keys stay in the URL")
    func explicitForms() throws {
        let b = try PlaybackURI("moql://relay:4443/org/team?jwt=abc&broadcast=room/cam")
        #expect(b.url == "moql://relay:4443/org/team?jwt=abc")
        #expect(b.broadcast == "room/cam")
        let p = try PlaybackURI("moql://relay:4443/anon?prefix=room")
        #expect(p.url == "moql://relay:4443/anon" && p.prefix == "room" && p.broadcast == nil)
    }

    @Test("query keys naming properties are taken out, in order")
    func properties() throws {
        let parsed = try PlaybackURI("moql://relay/anon/cam?latency=250&jwt=t&video-track=hd&tls-disable-verify=true")
        #expect(parsed.properties.map(\.0) == ["latency", "video-track", "tls-disable-verify"])
        #expect(parsed.properties.map(\.1) == ["250", "hd", "true"])
        #expect(parsed.url == "moql://relay:4443/anon?jwt=t")
    }

    @Test("a URI without a broadcast, or of another scheme, is refused with what to write")
    func errors() throws {
        #expect(throws: MoqError.self) { try PlaybackURI("moql://relay:4443/") }
        #expect(throws: MoqError.self) { try PlaybackURI("rtsp://relay/anon/cam") }
        // WebTransport URLs split the same way (moqsrc's uri property; the URI handler claims only moql/moqt).
        #expect(try PlaybackURI("https://relay/anon/cam").url == "https://relay:443/anon")
        do {
            _ = try PlaybackURI("moql://relay:4443")
            Issue.record("accepted a URI without a broadcast")
        } catch {
            #expect(error.description.contains("?broadcast="))
        }
    }

    @Test("compose gives the explicit form, which parses back to the same settings")
    func roundTrip() throws {
        let uri = try #require(
            PlaybackURI.compose(url: "moql://relay:4443/anon?jwt=x", broadcast: "room one", prefix: nil))
        #expect(uri == "moql://relay:4443/anon?jwt=x&broadcast=room%20one")
        let parsed = try PlaybackURI(uri)
        #expect(parsed.url == "moql://relay:4443/anon?jwt=x" && parsed.broadcast == "room one")
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import Testing

@testable import SwiftMoQ

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Relay HTTP endpoint: /certificate.sha256, /announced, /fetch, /health", .serialized, .timeLimit(.minutes(1)))
struct RelayWebTests {
    /// GET over TCP (URLSession: the request suspends, nothing blocks the pool).
    static func get(_ relay: MoqRelay, _ path: String, headers: [String: String] = [:]) async throws
        -> (status: Int, body: String, cors: String?)
    {
        let port = try #require(relay.httpPort)
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)\(path)")))
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (
            http.statusCode, String(decoding: data, as: UTF8.self),
            http.value(forHTTPHeaderField: "Access-Control-Allow-Origin")
        )
    }

    @Test("the fingerprint an http:// client pins, at the QUIC port's number, readable cross-origin")
    func certificate() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            #expect(relay.httpPort == relay.port)
            let (status, body, cors) = try await Self.get(relay, "/certificate.sha256")
            #expect(status == 200 && body == relay.fingerprint && cors == "*")
            #expect(Hex.decode(body)?.count == 32)
            #expect(try await Self.get(relay, "/health").body == "ok\n")
            // A wrong path says what the endpoint serves (it was a bare "Not found").
            let missing = try await Self.get(relay, "/nothing")
            #expect(missing.status == 404)
            #expect(
                missing.body.contains("Not found: /nothing") && missing.body.contains("/certificate.sha256")
                    && missing.body.contains("/announced"), "\(missing.body)")
            // Shut down: the port is released at once (clients are refused, not left hanging).
            let port = try #require(relay.httpPort)
            await relay.shutdown(grace: .zero)
            await #expect(throws: (any Error).self) {
                _ = try await URLSession.shared.data(from: try #require(URL(string: "http://127.0.0.1:\(port)/health")))
            }
        }
    }

    @Test("/announced lists broadcasts under a prefix, one per line, as moq-relay does; tokens as for sessions")
    func announced() async throws {
        try await scoped(
            try RelayTests.relay(auth: RelayAuth(publicPrefixes: ["anon"], key: OwnershipTests.key)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            let publisher = try await RelayTests.connect(relay, "anon")
            for path in ["room/a", "room/b", "lobby"] { publisher.publish(BroadcastProducer(path: path)) }
            let secret = try await OwnershipTests.connect(
                relay, "secret", token: OwnershipTests.token(root: "secret", put: [""]))
            secret.publish(BroadcastProducer(path: "hidden"))
            try await eventually("the four broadcasts at the relay", detail: { "\(relay.origin.paths)" }) {
                relay.origin.paths.count == 4
            }

            let all = try await Self.get(relay, "/announced/anon")
            #expect(all.status == 200)
            #expect(Set(all.body.split(separator: "\n").map(String.init)) == ["room/a", "room/b", "lobby"])
            let room = try await Self.get(relay, "/announced/anon/room")
            #expect(Set(room.body.split(separator: "\n").map(String.init)) == ["a", "b"])
            // Not public: refused without a token, listed with one.
            #expect(try await Self.get(relay, "/announced/secret").status == 401)
            let token = OwnershipTests.token(root: "secret", put: [], get: [""])
            #expect(try await Self.get(relay, "/announced/secret?jwt=\(token)").body == "hidden")
            publisher.close()
            secret.close()
        }
    }

    @Test(
        "/fetch/<broadcast>/<track> answers a cached group, one frame, or the latest, as moq-relay does; errors say why"
    )
    func fetch() async throws {
        try await scoped(
            try RelayTests.relay(auth: RelayAuth(publicPrefixes: ["anon"], key: OwnershipTests.key)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            // Groups older than 300 ms behind the newest leave caches (the relay's too).
            let cached = try await CachedTrack.start(relay, path: "cam", maxAgeMs: 300)
            defer { cached.close() }
            let remote = cached.remote
            func writeGroup(_ n: Int) {
                let group = cached.track.appendGroup()
                for i in 0..<3 { group.write(Bytes(utf8: "g\(n)f\(i);"), timestamp: UInt64(n * 3 + i)) }
                group.finish()
            }
            for n in 0..<3 { writeGroup(n) }
            try await eventually("the relay to hold group 2") {
                remote.track.group(sequence: 2).map { remote.track.frameCount(of: $0) == 3 } ?? false
            }

            let one = try await Self.get(relay, "/fetch/anon/cam/video?group=1")
            #expect(one.status == 200 && one.body == "g1f0;g1f1;g1f2;", "\(one)")
            let latest = try await Self.get(relay, "/fetch/anon/cam/video")
            #expect(latest.status == 200 && latest.body == "g2f0;g2f1;g2f2;", "\(latest)")
            let frame = try await Self.get(relay, "/fetch/anon/cam/video?group=latest&frame=1")
            #expect(frame.status == 200 && frame.body == "g2f1;", "\(frame)")

            // What is not there says what is.
            let noFrame = try await Self.get(relay, "/fetch/anon/cam/video?group=1&frame=3")
            #expect(noFrame.status == 404 && noFrame.body.contains("has 3 frames"), "\(noFrame)")
            let noTrack = try await Self.get(relay, "/fetch/anon/cam/audio")
            #expect(noTrack.status == 404 && noTrack.body.contains("not in this relay's cache"), "\(noTrack)")
            let noBroadcast = try await Self.get(relay, "/fetch/anon/nobody/video")
            #expect(noBroadcast.status == 404 && noBroadcast.body.contains("not announced"), "\(noBroadcast)")
            #expect(try await Self.get(relay, "/fetch/anon/cam/video?group=soon").status == 400)
            #expect(try await Self.get(relay, "/fetch/anon/cam/video?group=18446744073709551615").status == 404)
            #expect(try await Self.get(relay, "/fetch/video").status == 400)
            #expect(try await Self.get(relay, "/fetch/secret/cam/video").status == 401)

            // Older groups age out of the cache: a fetch of one is a 404 naming what is held.
            try await Task.sleep(for: .milliseconds(400))  // the age under test, not synchronisation
            for n in 3..<6 { writeGroup(n) }
            try await eventually("the relay to drop group 0") {
                remote.track.group(sequence: 5) != nil
                    && relay.origin.broadcast("anon/cam")?.existingTrack("video")?
                        .group(sequence: 0) == nil
            }
            let gone = try await Self.get(relay, "/fetch/anon/cam/video?group=0")
            #expect(gone.status == 404 && gone.body.contains("it holds groups"), "\(gone)")
        }
    }

    @Test("/fetch of a group over 4 MiB is refused with 413 and what to do; its frames come one by one")
    func fetchTooLarge() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            let cached = try await CachedTrack.start(relay, path: "big", maxAgeMs: 30_000)
            defer { cached.close() }
            let remote = cached.remote
            let group = cached.track.appendGroup()
            for i in 0..<5 { group.write(Bytes(Array(repeating: UInt8(i), count: 1 << 20)), timestamp: UInt64(i)) }
            group.finish()
            try await eventually("the relay to hold the 5 MiB group") {
                remote.track.group(sequence: 0).map { remote.track.frameCount(of: $0) == 5 } ?? false
            }
            let whole = try await Self.get(relay, "/fetch/anon/big/video?group=0")
            #expect(whole.status == 413 && whole.body.contains("frame=N"), "\(whole.status) \(whole.body.prefix(200))")
            let one = try await Self.get(relay, "/fetch/anon/big/video?group=0&frame=4")
            #expect(one.status == 200 && one.body.utf8.count == 1 << 20 && one.body.utf8.allSatisfy { $0 == 4 })
        }
    }

    @Test("request heads are bounded: an oversized one gets 431, a POST 405")
    func bounds() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            let big = try await Self.get(relay, "/health", headers: ["x-pad": String(repeating: "a", count: 9000)])
            #expect(big.status == 431)
            let port = try #require(relay.httpPort)
            var post = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/health")))
            post.httpMethod = "POST"
            let (_, response) = try await URLSession.shared.data(for: post)
            #expect((response as? HTTPURLResponse)?.statusCode == 405)
        }
    }

    @Test("64 clients that never send a request hold the endpoint at most 5 s: the next one is answered after")
    func idleFlood() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            let port = try #require(relay.httpPort)
            // 70 connections that stay silent (loopback: connect completes through the listen backlog at once).
            var idle: [Int32] = []
            defer { for fd in idle { close(fd) } }
            for _ in 0..<70 { idle.append(try connectTCP(port: port)) }
            let start = ContinuousClock.now
            let answer = try await Self.get(relay, "/health")
            #expect(answer.status == 200)
            // Served only once the silent ones timed out: they held every slot until then.
            let waited = ContinuousClock.now - start
            #expect(waited > .seconds(3), "\(waited)")
        }
    }

    @Test("request heads parse in pieces; bad request lines are refused")
    func parsing() {
        let text = "GET /announced/a%20b?jwt=x%2By&z HTTP/1.1\r\nHost: h\r\nX-Y:  v \r\n\r\n"
        let bytes = Array(text.utf8)
        #expect(HTTPRequestHead.parse(Array(bytes.dropLast())) == .incomplete)
        #expect(
            HTTPRequestHead.parse(bytes)
                == .request(
                    HTTPRequestHead(
                        method: "GET", path: "/announced/a b", query: ["jwt": "x+y", "z": ""],
                        headers: ["host": "h", "x-y": "v"], target: "/announced/a%20b?jwt=x%2By&z")))
        #expect(HTTPRequestHead.parse(Array("GARBAGE\r\n\r\n".utf8)) == .invalid(status: 400))
        #expect(HTTPRequestHead.parse(Array("GET / HTTP/1.1\r\nno colon\r\n\r\n".utf8)) == .invalid(status: 400))
        #expect(HTTPRequestHead.parse([UInt8](repeating: 65, count: 9000)) == .invalid(status: 431))
    }

    @Test("a generated certificate rotates without a restart: new clients need the new pin, open sessions go on")
    func rotation() async throws {
        var configuration = MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)
        configuration.certificateRotation = .seconds(1)
        try await withRelay(try MoqRelay.start(configuration)) {
            (relay) async throws in
            let first = relay.fingerprint
            let open = try await RelayTests.connect(relay)
            try await eventually("the certificate to rotate", timeout: .seconds(10)) { relay.fingerprint != first }
            let second = relay.fingerprint
            #expect(second != first)
            // It rotates every second: by the time the answer comes (slow under ThreadSanitizer) the served
            // hash may already be the next one. It is the current one, never the first.
            let served = try await Self.get(relay, "/certificate.sha256").body
            #expect(served != first && (served == second || served == relay.fingerprint), "\(served)")
            // The old pin no longer matches what new connections get; the new one does.
            await #expect(throws: MoqError.self) {
                _ = try await MoqSession.connect(
                    "moql://127.0.0.1:\(relay.port)/anon", options: ClientOptions(tls: TLSOptions(fingerprint: first)))
            }
            // (It rotates every second: a handshake that straddles a rotation tries again with the newer pin.)
            var fresh: MoqSession?
            for _ in 0..<5 where fresh == nil {
                fresh = try? await MoqSession.connect(
                    "moql://127.0.0.1:\(relay.port)/anon",
                    options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
            }
            let session = try #require(fresh, "no session with the current pin")
            #expect(open.closeReason == nil)
            session.close()
            open.close()
        }
    }
}

/// A publisher of `<path>`/`video` at `/anon` and a viewer subscribed to it: the relay caches
/// what it pulls for its viewers, which is what `/fetch` serves.
private struct CachedTrack {
    let publisher: MoqSession
    let viewer: MoqSession
    let track: TrackProducer
    let remote: RemoteTrack

    static func start(_ relay: MoqRelay, path: String, maxAgeMs: UInt64) async throws -> CachedTrack {
        let publisher = try await RelayTests.connect(relay, "anon")
        let broadcast = BroadcastProducer(path: path)
        let track = broadcast.createTrack("video", info: TrackInfo(maxAgeMs: maxAgeMs))
        publisher.publish(broadcast)
        let viewer = try await RelayTests.connect(relay, "anon")
        try await viewer.waitForBroadcast(path)
        let remote = viewer.subscribe(
            broadcast: path, track: "video", range: SubscriptionRange(maxLatencyMs: max(maxAgeMs, 10_000)))
        return CachedTrack(publisher: publisher, viewer: viewer, track: track, remote: remote)
    }

    func close() {
        remote.cancel()
        viewer.close()
        publisher.close()
    }
}

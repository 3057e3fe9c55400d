// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `swiftmoq` command line against the Rust relay: data, discovery, and the one-line
/// errors a user gets.
@Suite("Interop: the swiftmoq CLI", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct CLIInteropTests {
    func pin(_ relay: RustRelay) -> [String] { ["--url", relay.url(), "--tls-fingerprint", relay.fingerprint] }

    @Test("publish-track | relay | subscribe-track --format json")
    func publishSubscribeJSON() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("cli")
        let subscriber = try CLI.start(
            ["subscribe-track"] + pin(relay) + [
                "--broadcast", name, "--track", "chat", "--format", "json", "--timeout", "20",
            ])
        let lines = (0..<6).map { "line number \($0) ✓" }
        let publisher = try await CLI.run(
            ["publish-track"] + pin(relay) + [
                "--broadcast", name, "--track", "chat", "--frames-per-group", "2", "--wait-subscribers", "1",
            ],
            stdin: lines.joined(separator: "\n") + "\n")
        #expect(publisher.status == 0, "\(publisher.stderr)")
        let result = try await subscriber.wait(timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        let objects = result.stdoutLines.compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 6)
        #expect(objects.map { $0["group"] as? Int } == [0, 0, 1, 1, 2, 2])
        #expect(objects.map { $0["index"] as? Int } == [0, 1, 0, 1, 0, 1])
        let payloads = objects.compactMap { ($0["payload"] as? String).flatMap { Data(base64Encoded: $0) } }
        #expect(payloads.map { String(decoding: $0, as: UTF8.self) } == lines)
        #expect(objects.map { $0["size"] as? Int } == lines.map { $0.utf8.count })
        let stamps = objects.compactMap { $0["timestamp_us"] as? Int }
        #expect(stamps == stamps.sorted())
    }

    @Test("subscribe-track --count prints lines and stops")
    func subscribeLinesWithCount() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("cli")
        let subscriber = try CLI.start(
            ["subscribe-track"] + pin(relay) + ["--broadcast", name, "--track", "t", "--count", "3"])
        let publisher = try CLI.start(
            ["publish-track"] + pin(relay) + [
                "--broadcast", name, "--track", "t", "--wait-subscribers", "1", "--timeout", "20",
            ], stdin: "a\nb\nc\nd\ne\n")
        let result = try await subscriber.wait(timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines == ["a", "b", "c"])
        _ = try await publisher.wait(timeout: .seconds(30))
    }

    @Test("announced prints the announce and the unannounce of a Rust publisher")
    func announced() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let prefix = RustPeer.uniqueName("cli-room")
        let session = try await relay.connect()
        let broadcast = BroadcastProducer(path: "\(prefix)/cam")
        session.publish(broadcast)
        // The broadcast is routable once the relay itself saw it.
        _ = try await relay.peer.waitFor(event: "announce", timeout: .seconds(20))
        let watcher = try CLI.start(["announced"] + pin(relay) + ["--prefix", prefix, "--count", "2"])
        try await eventually("the announce line") { watcher.stdoutSoFar.contains("announce \(prefix)/cam") }
        broadcast.close()
        let result = try await watcher.wait(timeout: .seconds(20))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines == ["announce \(prefix)/cam", "unannounce \(prefix)/cam"])
        session.close()
    }

    /// One clear line on stderr and a non-zero exit.
    func expectOneLineError(_ result: CLI.Result, containing text: String, status: Int32 = 1) {
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stderrLines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(text), "stderr: \(result.stderr)")
    }

    @Test("an unreachable relay")
    func unreachable() async throws {
        let result = try await CLI.run(
            [
                "subscribe-track", "--url", "moql://127.0.0.1:9/anon", "--tls-disable-verify", "--broadcast", "b",
                "--track", "t", "--connect-timeout", "3",
            ])
        // --tls-disable-verify adds its own warning line first.
        #expect(result.status == 1)
        #expect(result.stderrLines.last?.contains("cannot reach 127.0.0.1:9") == true, "\(result.stderr)")
    }

    @Test("a wrong fingerprint")
    func wrongFingerprint() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let result = try await CLI.run(
            ["announced", "--url", relay.url(), "--tls-fingerprint", String(repeating: "1", count: 64), "--count", "1"])
        expectOneLineError(result, containing: "fingerprint mismatch")
    }

    @Test("an unverifiable self-signed certificate")
    func untrusted() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let result = try await CLI.run(["announced", "--url", relay.url(), "--count", "1"])
        expectOneLineError(result, containing: "not trusted")
    }

    @Test("an unknown broadcast")
    func unknownBroadcast() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let result = try await CLI.run(
            ["subscribe-track"] + pin(relay) + ["--broadcast", "nobody/here", "--track", "t", "--timeout", "1"])
        expectOneLineError(result, containing: "broadcast 'nobody/here' is not announced")
    }

    @Test("a session the relay refuses")
    func refused() async throws {
        let relay = try await RustRelay.start(["--reject-path", "private", "--reject-code", "401"])
        defer { relay.stop() }
        let result = try await CLI.run(
            ["announced", "--url", relay.url("private/room"), "--tls-fingerprint", relay.fingerprint, "--count", "1"])
        expectOneLineError(result, containing: "refused")
    }

    @Test("swiftmoq relay prints its URL and fingerprint, relays, and exits 0 on SIGTERM after GOAWAY")
    func relayCommand() async throws {
        let relay = try CLI.start([
            "relay", "--listen", "127.0.0.1:0", "--tls-generate", "localhost", "--public", "anon",
        ])
        try await eventually("the relay's address") { relay.stdoutSoFar.contains("fingerprint ") }
        let lines = relay.stdoutSoFar.split(separator: "\n")
        guard let urlLine = lines.first(where: { $0.hasPrefix("url ") }),
            let fpLine = lines.first(where: { $0.hasPrefix("fingerprint ") })
        else {
            Issue.record("no url/fingerprint lines: \(relay.stdoutSoFar)")
            return
        }
        let url = try MoqURL(String(urlLine.dropFirst(4)))
        let fingerprint = String(fpLine.dropFirst(12))
        // A Rust publisher and a Rust subscriber through it.
        let client = ["--url", "moql://127.0.0.1:\(url.port)/anon", "--fingerprint", fingerprint]
        let name = RustPeer.uniqueName("cli-relay")
        let publisher = try RustPeer.launch(
            ["publish"] + client + ["--broadcast", name, "--groups", "0", "--interval-ms", "20"])
        defer { publisher.terminateInBackground() }
        let subscriber = try RustPeer.launch(["subscribe"] + client + ["--broadcast", name, "--count", "3"])
        #expect(try await subscriber.waitForExit(timeout: .seconds(30)) == 0, "\(subscriber.stderr)")
        // A Swift client sees GOAWAY when the relay is told to stop.
        let session = try await MoqSession.connect(
            "moql://127.0.0.1:\(url.port)/anon", options: ClientOptions(tls: TLSOptions(fingerprint: fingerprint)))
        kill(relay.process.processIdentifier, SIGTERM)
        _ = try await session.closed()
        #expect(session.goawayURI != nil)
        let result = try await relay.wait(timeout: .seconds(15))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("GOAWAY"))
    }

    @Test("swiftmoq relay on a UDP port already taken says the address is in use and exits 1 (it aborted)")
    func relayPortTaken() async throws {
        // Hold a UDP port on loopback, without SO_REUSEPORT, as another program would.
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        try #require(bound == 0)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = UInt16(bigEndian: address.sin_port)
        for threads in ["1", "2"] {
            let result = try await CLI.run(
                ["relay", "--listen", "127.0.0.1:\(port)", "--tls-generate", "localhost", "--threads", threads],
                timeout: .seconds(30))
            #expect(result.status == 1, "threads \(threads): status \(result.status): \(result.stderr)")
            #expect(result.stderr.lowercased().contains("address already in use"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count <= 3, "\(result.stderr)")
        }
    }

    @Test(
        "swiftmoq relay --web serves the watch page; publish-track over http:// (hash fetched) and subscribe-track over https:// through it"
    )
    func relayOverWebTransport() async throws {
        let relay = try CLI.start(["relay", "--listen", "127.0.0.1:0", "--web"])
        defer { kill(relay.process.processIdentifier, SIGTERM) }
        try await eventually("the relay's watch line") { relay.stdoutSoFar.contains("watch http://") }
        let lines = relay.stdoutSoFar.split(separator: "\n")
        let url = try MoqURL(String(try #require(lines.first { $0.hasPrefix("url ") }).dropFirst(4)))
        let fingerprint = String(try #require(lines.first { $0.hasPrefix("fingerprint ") }).dropFirst(12))
        #expect(lines.contains("watch http://127.0.0.1:\(url.port)/"), "\(lines)")
        let (page, _) = try await URLSession.shared.data(
            from: try #require(URL(string: "http://127.0.0.1:\(url.port)/")))
        #expect(String(decoding: page, as: UTF8.self).contains("<canvas"))
        let name = RustPeer.uniqueName("cli-wt")
        let subscriber = try CLI.start([
            "subscribe-track", "--url", "https://127.0.0.1:\(url.port)/anon", "--tls-fingerprint", fingerprint,
            "--broadcast", name, "--track", "chat", "--timeout", "20",
        ])
        let publisher = try await CLI.run(
            [
                "publish-track", "--url", "http://127.0.0.1:\(url.port)/anon", "--broadcast", name, "--track", "chat",
                "--wait-subscribers", "1",
            ], stdin: "one\ntwo\nthree\n")
        #expect(publisher.status == 0, "\(publisher.stderr)")
        let result = try await subscriber.wait(timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines == ["one", "two", "three"])
    }

    @Test(
        "swiftmoq relay with neither --public nor --auth-key serves this machine only; an open relay must be asked for")
    func openRelayIsLoopbackOnly() async throws {
        let refused = try await CLI.run(["relay", "--listen", "0.0.0.0:0"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("refusing to run an open relay on 0.0.0.0"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--public ''"))
        let local = try CLI.start(["relay", "--listen", "127.0.0.1:0"])
        try await eventually("the relay's address") { local.stdoutSoFar.contains("fingerprint ") }
        #expect(local.stdoutSoFar.contains("url moql://127.0.0.1:"))
        kill(local.process.processIdentifier, SIGTERM)
        let result = try await local.wait(timeout: .seconds(15))
        #expect(result.stderr.contains("listens on 127.0.0.1 only"), "\(result.stderr)")
        // Asked for: every path public on every interface.
        let open = try CLI.start(["relay", "--listen", "0.0.0.0:0", "--public", ""])
        try await eventually("the open relay's address") { open.stdoutSoFar.contains("fingerprint ") }
        kill(open.process.processIdentifier, SIGTERM)
        let ended = try await open.wait(timeout: .seconds(15))
        #expect(ended.status == 0, "status \(ended.status): \(ended.stderr)")
    }

    @Test("subscribe-track follows GOAWAY: a new session before the old closes, no frame lost or repeated")
    func subscribeFollowsGoaway() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let publisher = try await relay.connect()
            defer { publisher.close() }
            let broadcast = BroadcastProducer(path: "goaway")
            let track = broadcast.createTrack("lines")
            publisher.publish(broadcast)
            let reader = try CLI.start([
                "subscribe-track", "--url", relay.url(), "--tls-fingerprint", relay.relay.fingerprint, "--broadcast",
                "goaway", "--track", "lines", "--count", "30", "--verbose",
            ])
            try await eventually("the subscription at the relay", timeout: .seconds(20)) {
                relay.relay.origin.broadcast("anon/goaway")?.existingTrack("lines")?.observerCount ?? 0 > 0
            }
            for i in 0..<30 {
                if i == 10 { relay.relay.goaway() }
                track.writeSingleFrameGroup(Bytes(utf8: "line \(i)"), timestamp: UInt64(i))
                try await Task.sleep(for: .milliseconds(50))
            }
            let result = try await reader.wait(timeout: .seconds(20))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutLines == (0..<30).map { "line \($0)" })
            #expect(result.stderr.contains("go away"), "\(result.stderr)")
        }
    }

    @Test("usage errors exit 2 and say what is missing")
    func usage() async throws {
        let result = try await CLI.run(["subscribe-track", "--broadcast", "b"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--url is required"))
        let bad = try await CLI.run(["announced", "--url", "quic://relay.example/"])
        #expect(bad.status == 2, "\(bad.stderr)")
        #expect(bad.stderr.contains("unsupported scheme 'quic'"), "\(bad.stderr)")
        let badMedia = try await CLI.run(["play", "--url", "quic://relay.example/", "--broadcast", "b"])
        #expect(badMedia.status == 2, "\(badMedia.stderr)")
        let badProtocol = try await CLI.run(["announced", "--url", "moql://relay.example/", "--protocol", "moq-99"])
        #expect(badProtocol.status == 2, "\(badProtocol.stderr)")
        #expect(
            badProtocol.stderr.contains("'moq-99' is none of auto, moq-lite, ietf, ietf-16, ietf-14"),
            "\(badProtocol.stderr)")
    }

    @Test("each command's help states the defaults it uses")
    func helpStatesDefaults() async throws {
        let screen = try await CLI.run(["screen-share", "--help"])
        let screenText = screen.stdout + screen.stderr
        #expect(screen.status == 0, "\(screenText)")
        // The header and the options say the same: the display's size, 15 fps, 2.5 Mbit/s, keyframes every 2 s.
        #expect(screenText.contains("15 fps, 2.5 Mbit/s, a keyframe every 2 s"), "\(screenText)")
        #expect(screenText.contains("frame rate cap (default 15)"), "\(screenText)")
        #expect(screenText.contains("video bitrate in bit/s (default 2500000)"), "\(screenText)")
        #expect(screenText.contains("output size (default 0x0: the source's own"), "\(screenText)")
        #expect(screenText.contains("groups (default 2)"), "\(screenText)")
        let publish = try await CLI.run(["publish", "--help"])
        let publishText = publish.stdout + publish.stderr
        #expect(publishText.contains("output size (default 1280x720;"), "\(publishText)")
        #expect(publishText.contains("frame rate cap (default 30)"), "\(publishText)")
        #expect(publishText.contains("video bitrate in bit/s (default 2000000)"), "\(publishText)")
        let relay = try await CLI.run(["relay", "--help"])
        let relayText = relay.stdout + relay.stderr
        #expect(relayText.contains("(default 127.0.0.1:4443 when neither --public"), "\(relayText)")
    }
}

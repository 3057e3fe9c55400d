// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// moq-lite over WebSocket (qmux-01) with moq-dev's client (moq-ffi 0.4.18), which is a WebSocket
/// client only (its server does not listen on TCP, so the other direction has no Rust peer).
@Suite("Interop: WebSocket (qmux) with the Rust client", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct WebSocketInteropTests {
    /// A Rust publisher's groups as a Rust subscriber reading in arrival order saw them: from the
    /// first group it got, every group whole, each group's frames in order with their payloads.
    /// Groups may interleave: groups that reach a slow relay together go newest first (moq-lite's
    /// priority), and moq-dev's sequence-order reader would then skip the older ones (CI saw group
    /// 1 of 6 skipped that way), so the subscriber reads each group as its stream opens.
    static func expectRustTail(_ subscriber: RustPeer, groups: Int, frames: Int, size: Int) async throws {
        let events = try await subscriber.collect(until: "end", timeout: .seconds(60)).filter { $0.name == "frame" }
        let first = events.compactMap { $0.int("group") }.min() ?? groups
        #expect(first < groups, "no group arrived")
        #expect(
            framesByGroup(events) == wholeGroups(first..<groups, frames: frames), "arrived: \(arrivalOrder(events))")
        #expect(
            events.allSatisfy {
                $0.bytes("payload")
                    == rustPayload(group: $0.int("group") ?? -1, frame: $0.int("index") ?? -1, size: size)
            })
    }

    @Test(
        "Rust publisher over ws:// → Swift relay → Rust subscriber over ws://: every frame from its first group, in order"
    )
    func rustClientsOverWebSocket() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let name = RustPeer.uniqueName("ws")
            let port = relay.relay.port
            let (groups, frames, size) = (6, 3, 20_000)
            let go = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).go").path
            defer { try? FileManager.default.removeItem(atPath: go) }
            let publisher = try RustPeer.launch([
                "publish", "--url", "ws://127.0.0.1:\(port)/anon", "--websocket-delay-ms", "0", "--broadcast", name,
                "--groups", "\(groups)", "--frames-per-group", "\(frames)", "--payload-size", "\(size)",
                "--interval-ms",
                "50", "--go-file", go, "--linger-ms", "2000",
            ])
            defer { publisher.terminateInBackground() }
            let subscriber = try RustPeer.launch([
                "subscribe", "--url", "ws://127.0.0.1:\(port)/anon", "--websocket-delay-ms", "0", "--broadcast", name,
                "--track", "data", "--order", "arrival",
            ])
            defer { subscriber.terminateInBackground() }
            try await eventually("the subscription at the relay", timeout: .seconds(30)) {
                relay.relay.origin.broadcast("anon/\(name)")?.existingTrack("data")?.observerCount == 1
            }
            #expect(await relay.relay.sessionStats().map(\.binding) == [.webSocket, .webSocket])
            _ = FileManager.default.createFile(atPath: go, contents: Data())
            try await Self.expectRustTail(subscriber, groups: groups, frames: frames, size: size)
        }
    }

    /// Sends `request` on a fresh TCP connection to the relay's port and returns the whole answer.
    static func exchange(_ port: UInt16, _ request: String, then extra: [UInt8] = []) throws -> String {
        let fd = try connectTCP(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = (Array(request.utf8) + extra).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            answer += chunk[..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test("bad upgrades get a status that says what to fix; a session beside them goes on")
    func badUpgrades() async throws {
        try await scoped(
            try SwiftRelay.start { $0.auth = RelayAuth(publicPrefixes: ["anon"]) }, teardown: { await $0.stop() }
        ) { (relay) async throws in
            let port = relay.relay.port
            let session = try await relay.connect()
            defer { session.close() }
            let head =
                "Host: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            let noProtocol = try Self.exchange(port, "GET /anon HTTP/1.1\r\n\(head)\r\n")
            #expect(noProtocol.hasPrefix("HTTP/1.1 400") && noProtocol.contains("qmux-01.moq-lite-06"), "\(noProtocol)")
            let unknown = try Self.exchange(
                port, "GET /anon HTTP/1.1\r\n\(head)Sec-WebSocket-Protocol: webtransport\r\n\r\n")
            #expect(unknown.hasPrefix("HTTP/1.1 400"), "\(unknown)")
            let unauthorized = try Self.exchange(
                port, "GET /private HTTP/1.1\r\n\(head)Sec-WebSocket-Protocol: qmux-01.moq-lite-06\r\n\r\n")
            #expect(unauthorized.hasPrefix("HTTP/1.1 401"), "\(unauthorized)")
            // A good upgrade whose client then sends a record over the limit: the relay closes it (1009).
            let oversized = try Self.exchange(
                port,
                "GET /anon HTTP/1.1\r\n\(head)Sec-WebSocket-Protocol: qmux-01.moq-lite-06\r\n\r\n",
                then: [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4])
            #expect(
                oversized.hasPrefix("HTTP/1.1 101") && oversized.contains("Sec-WebSocket-Protocol: qmux-01.moq-lite-06")
            )
            #expect(session.closeReason == nil)
            #expect(await relay.relay.sessionStats().map(\.binding) == [.quic])
        }
    }
}

extension WebSocketInteropTests {
    @Test("UDP blackholed: moq-dev's clients, given http:// URLs, fall back to WebSocket and reach the Swift relay")
    func udpBlackholed() async throws {
        try await Self.rustClientsFallBack(secure: false)
    }

    @Test(
        "UDP blackholed: moq-dev's clients, given https:// URLs and the relay's pin, fall back to wss:// (TLS on its TCP port)"
    )
    func udpBlackholedSecure() async throws {
        try await Self.rustClientsFallBack(secure: true)
    }

    /// A Rust publisher and subscriber reach the Swift relay through a port that drops UDP: over
    /// `ws://` from `http://`, or `wss://` (pinned) from `https://`.
    static func rustClientsFallBack(secure: Bool) async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let blackhole = try RustPeer.launch(["udp-blackhole", "--target", "\(relay.relay.port)"])
            defer { blackhole.terminateInBackground() }
            let port = try await blackhole.waitFor(event: "listening", timeout: .seconds(20)).int("port") ?? 0
            let name = RustPeer.uniqueName(secure ? "wss-fallback" : "ws-fallback")
            // WebTransport over UDP (which never answers) raced by WebSocket 200 ms later: moq-dev's default.
            let url = "\(secure ? "https" : "http")://127.0.0.1:\(port)/anon"
            let client =
                ["--url", url, "--websocket-delay-ms", "200"]
                + (secure ? ["--fingerprint", relay.relay.fingerprint] : [])
            let go = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).go").path
            defer { try? FileManager.default.removeItem(atPath: go) }
            let publisher = try RustPeer.launch(
                ["publish"] + client + [
                    "--broadcast", name, "--groups", "4", "--frames-per-group", "3", "--payload-size", "1000",
                    "--interval-ms", "100", "--go-file", go, "--linger-ms", "2000",
                ])
            defer { publisher.terminateInBackground() }
            let subscriber = try RustPeer.launch(
                ["subscribe"] + client + ["--broadcast", name, "--track", "data", "--order", "arrival"])
            defer { subscriber.terminateInBackground() }
            try await eventually("the subscription at the relay", timeout: .seconds(30)) {
                relay.relay.origin.broadcast("anon/\(name)")?.existingTrack("data")?.observerCount == 1
            }
            #expect(await relay.relay.sessionStats().map(\.binding) == [.webSocket, .webSocket])
            _ = FileManager.default.createFile(atPath: go, contents: Data())
            try await Self.expectRustTail(subscriber, groups: 4, frames: 3, size: 1000)
        }
    }

    @Test(
        "HTTPS on the relay's TCP port (Python's TLS client, pinned): /certificate.sha256 and /health; plain HTTP beside it"
    )
    func httpsEndpoints() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            for (path, body) in [("/certificate.sha256", relay.relay.fingerprint), ("/health", "")] {
                let get = try RustPeer.launch([
                    "https-get", "--port", "\(relay.relay.port)", "--path", path, "--fingerprint",
                    relay.relay.fingerprint,
                ])
                let response = try await get.waitFor(event: "response", timeout: .seconds(20))
                #expect(response.int("status") == 200)
                #expect(response.string("body")?.hasPrefix(body) == true, "\(response)")
                #expect(response.string("tls") == "TLSv1.3")
            }
            #expect(
                try Self.exchange(relay.relay.port, "GET /certificate.sha256 HTTP/1.1\r\nHost: x\r\n\r\n")
                    .contains(relay.relay.fingerprint))
        }
    }
}

/// Our client over WebSocket: `ws://` directly, and `http://` falling back where UDP is blackholed.
@Suite("Swift client over WebSocket (qmux)", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct WebSocketClientTests {
    /// Publishes one group of `frames` frames on `broadcast`/`data` through `publisher` and reads them back through `viewer`.
    static func roundTrip(publisher: MoqSession, viewer: MoqSession, broadcast: String) async throws -> [[UInt8]] {
        let producer = BroadcastProducer(path: broadcast)
        let track = producer.createTrack("data")
        publisher.publish(producer)
        try await viewer.waitForBroadcast(broadcast, timeout: .seconds(20))
        let remote = viewer.subscribe(
            broadcast: broadcast, track: "data", range: SubscriptionRange(maxLatencyMs: 10_000))
        let consumer = remote.consumer(maxLatencyMs: 10_000)
        try await eventually("the subscription", timeout: .seconds(20)) { track.observerCount == 1 }
        let payloads = (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 30_000) }
        let group = track.appendGroup()
        for p in payloads { _ = group.write(Bytes(p), timestamp: 0) }
        group.finish()
        var got: [[UInt8]] = []
        guard let g = try await consumer.nextGroup() else { return got }
        while let f = try await g.nextFrame() { got.append(f.payload.array) }
        producer.close()
        return got
    }

    @Test("ws:// both ways through the Swift relay: 600 KB in 30 KB frames, a WebSocket binding")
    func webSocketURL() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let url = "ws://127.0.0.1:\(relay.relay.port)/anon"
            let publisher = try await MoqSession.connect(url)
            defer { publisher.close() }
            let viewer = try await MoqSession.connect(url)
            defer { viewer.close() }
            let got = try await Self.roundTrip(publisher: publisher, viewer: viewer, broadcast: "ws-swift")
            #expect(got == (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 30_000) })
            #expect(viewer.binding == .webSocket && publisher.binding == .webSocket)
            #expect(await relay.relay.sessionStats().map(\.binding) == [.webSocket, .webSocket])
        }
    }

    @Test("http:// with UDP blackholed: the session falls back to WebSocket 200 ms after QUIC; QUIC only fails")
    func fallback() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let blackhole = try RustPeer.launch(["udp-blackhole", "--target", "\(relay.relay.port)"])
            defer { blackhole.terminateInBackground() }
            let port = try await blackhole.waitFor(event: "listening", timeout: .seconds(20)).int("port") ?? 0
            // The certificate hash comes over TCP (as for any http:// URL); QUIC then never answers.
            let url = "http://127.0.0.1:\(port)/anon"
            let started = ContinuousClock.now
            let viewer = try await MoqSession.connect(url)
            defer { viewer.close() }
            #expect(viewer.binding == .webSocket)
            #expect(ContinuousClock.now - started < .seconds(8), "fell back in \(ContinuousClock.now - started)")
            let publisher = try await MoqSession.connect(url)
            defer { publisher.close() }
            let got = try await Self.roundTrip(publisher: publisher, viewer: viewer, broadcast: "ws-fallback")
            #expect(got.count == 20)
            // Without the fallback the same URL fails (QUIC only).
            var quicOnly = ClientOptions(connectTimeout: .seconds(1))
            quicOnly.webSocketDelay = nil
            await #expect(throws: MoqError.self) { try await MoqSession.connect(url, options: quicOnly) }
        }
    }

    @Test("drain() before close() over WebSocket: what was written reaches the viewer (nothing is cut by the close)")
    func drainBeforeClose() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let url = "ws://127.0.0.1:\(relay.relay.port)/anon"
            let publisher = try await MoqSession.connect(url)
            let viewer = try await MoqSession.connect(url)
            defer { viewer.close() }
            let producer = BroadcastProducer(path: "ws-drain")
            let track = producer.createTrack("data")
            publisher.publish(producer)
            try await viewer.waitForBroadcast("ws-drain", timeout: .seconds(20))
            let remote = viewer.subscribe(
                broadcast: "ws-drain", track: "data", range: SubscriptionRange(maxLatencyMs: 10_000))
            let consumer = remote.consumer(maxLatencyMs: 10_000)
            try await eventually("the subscription", timeout: .seconds(20)) { track.observerCount == 1 }
            let group = track.appendGroup()
            for i in 0..<40 { _ = group.write(Bytes([UInt8](repeating: UInt8(i), count: 50_000)), timestamp: 0) }
            group.finish()
            await publisher.drain(timeout: .seconds(10))
            publisher.close()
            var got = 0
            if let g = try await consumer.nextGroup() {
                while (try? await g.nextFrame()) ?? nil != nil { got += 1 }
            }
            #expect(got == 40)
        }
    }

    @Test("ws:// to a port nobody listens on, and to a relay refusing the token: clear errors")
    func failures() async throws {
        try await scoped(
            try SwiftRelay.start { $0.auth = RelayAuth(publicPrefixes: ["anon"]) }, teardown: { await $0.stop() }
        ) { (relay) async throws in
            do {
                _ = try await MoqSession.connect("ws://127.0.0.1:1/anon")
                Issue.record("connected to port 1")
            } catch {
                #expect("\(error)".contains("over TCP"), "\(error)")
            }
            do throws(MoqError) {
                _ = try await MoqSession.connect("ws://127.0.0.1:\(relay.relay.port)/private")
                Issue.record("connected to a private path")
            } catch {
                #expect(error.isFatal && "\(error)".contains("401"), "\(error)")
            }
            #expect(try MoqURL("wss://relay.example/anon").port == 443)
        }
    }

    @Test(
        "wss:// both ways through the Swift relay, pinned to its certificate: TLS on the HTTP port, a WebSocket binding"
    )
    func secureWebSocketURL() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let url = "wss://127.0.0.1:\(relay.relay.port)/anon"
            let options = ClientOptions(tls: TLSOptions(fingerprint: relay.relay.fingerprint))
            let publisher = try await MoqSession.connect(url, options: options)
            defer { publisher.close() }
            let viewer = try await MoqSession.connect(url, options: options)
            defer { viewer.close() }
            let got = try await Self.roundTrip(publisher: publisher, viewer: viewer, broadcast: "wss-swift")
            #expect(got == (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 30_000) })
            #expect(viewer.binding == .webSocket && publisher.binding == .webSocket)
            #expect(await relay.relay.sessionStats().map(\.binding) == [.webSocket, .webSocket])
        }
    }

    @Test(
        "https:// with UDP blackholed: the session falls back to wss:// with the same pin; a wrong pin fails over both")
    func secureFallback() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let blackhole = try RustPeer.launch(["udp-blackhole", "--target", "\(relay.relay.port)"])
            defer { blackhole.terminateInBackground() }
            let port = try await blackhole.waitFor(event: "listening", timeout: .seconds(20)).int("port") ?? 0
            let url = "https://127.0.0.1:\(port)/anon"
            let options = ClientOptions(tls: TLSOptions(fingerprint: relay.relay.fingerprint))
            let viewer = try await MoqSession.connect(url, options: options)
            defer { viewer.close() }
            #expect(viewer.binding == .webSocket)
            let publisher = try await MoqSession.connect(url, options: options)
            defer { publisher.close() }
            let got = try await Self.roundTrip(publisher: publisher, viewer: viewer, broadcast: "wss-fallback")
            #expect(got.count == 20)
            // The pin binds the WebSocket arm too: another certificate is refused there as well.
            var wrong = ClientOptions(tls: TLSOptions(fingerprint: String(repeating: "ab", count: 32)))
            wrong.connectTimeout = .seconds(3)
            do {
                _ = try await MoqSession.connect("wss://127.0.0.1:\(port)/anon", options: wrong)
                Issue.record("connected with a wrong pin")
            } catch {
                #expect(
                    "\(error)".contains("fingerprint mismatch") && "\(error)".contains(relay.relay.fingerprint),
                    "\(error)")
            }
        }
    }

    @Test(
        "wss:// to a self-signed relay with the system CAs is refused, saying how to pin; the open session is unharmed")
    func secureRefusals() async throws {
        try await scoped(try SwiftRelay.start(), teardown: { await $0.stop() }) { (relay) async throws in
            let url = "wss://127.0.0.1:\(relay.relay.port)/anon"
            let options = ClientOptions(tls: TLSOptions(fingerprint: relay.relay.fingerprint))
            let open = try await MoqSession.connect(url, options: options)
            defer { open.close() }
            do throws(MoqError) {
                _ = try await MoqSession.connect(url)
                Issue.record("a self-signed certificate was trusted")
            } catch {
                guard case .tls(let text) = error else { throw error }
                #expect(text.contains("not trusted") && text.contains(relay.relay.fingerprint), "\(text)")
            }
            // A broken TLS hello gets an alert and the end (no HTTP), and harms nothing beside it.
            let broken = try WebSocketInteropTests.exchange(
                relay.relay.port, "", then: [0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00])
            #expect(!broken.contains("HTTP/1.1"))
            // Plain HTTP on the same port still answers.
            #expect(
                try WebSocketInteropTests.exchange(relay.relay.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                    .hasPrefix("HTTP/1.1 200"))
            let viewer = try await MoqSession.connect(url, options: options)
            defer { viewer.close() }
            let got = try await Self.roundTrip(publisher: open, viewer: viewer, broadcast: "wss-after-refusals")
            #expect(got.count == 20)
        }
    }

    @Test("from a non-loopback address: ws:// is refused (403, use wss://), wss:// is served")
    func nonLoopbackPeers() async throws {
        guard let address = try Self.nonLoopbackIPv4() else {
            Issue.record("this machine has no non-loopback IPv4 address to test from")
            return
        }
        try await scoped(try SwiftRelay.start { $0.host = "0.0.0.0" }, teardown: { await $0.stop() }) {
            (relay) async throws in
            do {
                _ = try await MoqSession.connect("ws://\(address):\(relay.relay.port)/anon")
                Issue.record("plain WebSocket served to \(address)")
            } catch {
                #expect("\(error)".contains("403") && "\(error)".contains("wss://"), "\(error)")
            }
            let options = ClientOptions(tls: TLSOptions(fingerprint: relay.relay.fingerprint))
            let session = try await MoqSession.connect("wss://\(address):\(relay.relay.port)/anon", options: options)
            defer { session.close() }
            #expect(session.binding == .webSocket)
        }
    }

    /// The first IPv4 address of this machine that is not loopback.
    static func nonLoopbackIPv4() throws -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var next = list
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else {
                continue
            }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard
                getnameinfo(
                    address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0,
                    NI_NUMERICHOST) == 0
            else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !text.hasPrefix("127.") { return text }
        }
        return nil
    }
}

extension WebSocketInteropTests {
    @Test("a stalled WebSocket subscriber: its backlog is shed within the session's budget, the others get everything")
    func stalledWebSocketSubscriber() async throws {
        var limits = SessionLimits()
        limits.maxUnsentBytes = 1 << 20
        try await scoped(try SwiftRelay.start(limits: limits), teardown: { await $0.stop() }) { (relay) async throws in
            let name = RustPeer.uniqueName("ws-stall")
            let (groups, frames, size) = (60, 5, 20_000)  // ~6 MB in about 3 s
            let publisher = try RustPeer.launch(
                ["publish"] + relay.client() + [
                    "--broadcast", name, "--groups", "\(groups)", "--frames-per-group", "\(frames)", "--payload-size",
                    "\(size)", "--interval-ms", "50", "--linger-ms", "2000", "--wait-subscriber",
                    "--wallclock-timestamps",
                ])
            defer { publisher.terminateInBackground() }
            let ws = ["--url", "ws://127.0.0.1:\(relay.relay.port)/anon", "--websocket-delay-ms", "0"]
            let stalled = try RustPeer.launch(["subscribe"] + ws + ["--broadcast", name, "--max-latency-ms", "500"])
            // Frozen once its subscription flows: it reads nothing more, so its TCP window closes and
            // qmux's credit stops the relay; what the relay holds for it is bounded by the session's budget.
            try await stalled.waitFor(event: "frame", timeout: .seconds(30))
            kill(stalled.pid, SIGSTOP)
            defer {
                kill(stalled.pid, SIGCONT)
                stalled.terminateInBackground()
            }
            let healthy = try RustPeer.launch(["subscribe"] + ws + ["--broadcast", name, "--max-latency-ms", "5000"])
            defer { healthy.terminateInBackground() }
            _ = try await healthy.waitFor(event: "subscribed", timeout: .seconds(30))
            #expect(await relay.relay.sessionStats().filter { $0.binding == .webSocket }.count == 2)
            let events = try await healthy.collect(until: "end", timeout: .seconds(60)).filter { $0.name == "frame" }
            let first = events.compactMap { $0.int("group") }.min() ?? groups
            let got: [[Int]] = events.map { [$0.int("group") ?? -1, $0.int("index") ?? -1] }
            #expect(got == (first..<groups).flatMap { g in (0..<frames).map { [g, $0] } })
            #expect(first < groups - 20, "joined late: first group \(first)")
            let stats = await relay.relay.sessionStats()
            let shed = stats.reduce(UInt64(0)) {
                $0 + $1.counters.groupsResetAsOld + $1.counters.groupsDroppedForBudget
            }
            #expect(shed > 0, "no group was dropped for the stalled subscriber")
        }
    }
}

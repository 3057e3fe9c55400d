// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// Frames through moq-dev's own relay (`moq.Server`), in every direction.
@Suite("Interop: data through the Rust relay", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct DataInteropTests {
    @Test("Swift publisher → Rust relay → Rust subscriber: every frame intact and in order")
    func swiftPublisherRustSubscriber() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("swift-pub")
        let session = try await relay.connect()
        defer { session.close() }
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack(
            "data", info: TrackInfo(priority: 100, maxAgeMs: 10_000, timescale: 1_000_000))
        session.publish(broadcast)

        // Arrival order: moq-ffi's sequence-order reader discards a group that arrives after a newer
        // one, and moq-lite sends the newest group first when the path is busy (a loaded machine).
        // Every frame must still arrive, intact and in order within its group.
        let subscriber = try RustPeer.launch(
            ["subscribe"] + relay.client + ["--broadcast", name, "--track", "data", "--order", "arrival"])
        defer { subscriber.terminateInBackground() }
        try await eventually("the Rust subscriber to subscribe") { track.observerCount > 0 }
        let (groups, frames) = (8, 5)
        func publishGroup(_ g: Int) {
            let group = track.appendGroup()
            for f in 0..<frames {
                let payload = Array("swift g\(g) f\(f) ".utf8) + [UInt8](repeating: UInt8(g * 16 + f), count: 200 * f)
                group.write(Bytes(payload), timestamp: UInt64((g * frames + f) * 20_000))
            }
            group.finish()
        }
        // The relay's subscription to us can precede the Rust subscriber's own by more than a
        // group interval on a loaded machine, and a live subscriber starts at the newest group:
        // group 0 stays the newest until the subscriber has its first frame.
        publishGroup(0)
        var events: [PeerEvent] = []
        while !events.contains(where: { $0.name == "frame" }) {
            let event = try await subscriber.next(timeout: .seconds(20))
            try #require(event.name != "error", "the Rust subscriber failed: \(event.line)")
            events.append(event)
        }
        // Then the next groups, each once the previous one has arrived whole: a group overtaken by a
        // newer one (moq-lite sends the newest first when the path is busy) may be dropped by the Rust
        // relay, and this test is about every frame arriving intact, not about ordering under load.
        for g in 1..<groups {
            publishGroup(g)
            while !events.contains(where: {
                $0.name == "frame" && $0.int("group") == g && $0.int("index") == frames - 1
            }) {
                let event = try await subscriber.next(timeout: .seconds(20))
                try #require(event.name != "error", "the Rust subscriber failed: \(event.line)")
                events.append(event)
            }
        }
        track.finish()
        events += try await subscriber.collect(until: "end", timeout: .seconds(30))
        let received = events.filter { $0.name == "frame" }
        // Groups may interleave: see framesByGroup.
        #expect(
            framesByGroup(received) == wholeGroups(0..<groups, frames: frames), "arrived: \(arrivalOrder(received))")
        for event in received {
            let (g, f) = (event.int("group")!, event.int("index")!)
            let expected = Array("swift g\(g) f\(f) ".utf8) + [UInt8](repeating: UInt8(g * 16 + f), count: 200 * f)
            #expect(event.bytes("payload") == expected)
            #expect(event.int("timestamp_us") == (g * frames + f) * 20_000)
        }
        #expect(try await subscriber.waitForExit(timeout: .seconds(10)) == 0)
    }

    @Test("Rust publisher → Rust relay → Swift subscriber: every frame intact and in order")
    func rustPublisherSwiftSubscriber() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("rust-pub")
        let session = try await relay.connect()
        defer { session.close() }
        let (groups, frames, size) = (10, 4, 700)
        let publisher = try RustPeer.launch(
            ["publish"] + relay.client + [
                "--broadcast", name, "--track", "data", "--groups", "\(groups)", "--frames-per-group", "\(frames)",
                "--payload-size", "\(size)", "--interval-ms", "5", "--wait-subscriber", "--linger-ms", "3000",
            ])
        defer { publisher.terminateInBackground() }
        try await session.waitForBroadcast(name, timeout: .seconds(20))
        let remote = session.subscribe(broadcast: name, track: "data", range: SubscriptionRange(maxLatencyMs: 10_000))
        let received = try await readAll(remote.consumer())
        let order: [[Int]] = received.map { [Int($0.0), $0.1] }
        let expectedOrder: [[Int]] = (0..<groups).flatMap { g in (0..<frames).map { [g, $0] } }
        #expect(order == expectedOrder)
        for (g, f, ts, payload) in received {
            #expect(payload == rustPayload(group: Int(g), frame: f, size: size))
            #expect(ts == UInt64((Int(g) * frames + f) * 33_333))
        }
        #expect(remote.track.info?.timescale == 1_000_000)
        #expect(remote.track.end == .finished(end: UInt64(groups)))
    }

    @Test("Swift → Rust relay → Swift")
    func swiftToSwift() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("swift-swift")
        let publisher = try await relay.connect()
        defer { publisher.close() }
        let subscriber = try await relay.connect()
        defer { subscriber.close() }
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("lines")
        publisher.publish(broadcast)
        try await subscriber.waitForBroadcast(name)
        let remote = subscriber.subscribe(
            broadcast: name, track: "lines", range: SubscriptionRange(maxLatencyMs: 10_000))
        try await eventually("the relay to subscribe upstream") { track.observerCount > 0 }
        for i in 0..<50 {
            let group = track.appendGroup()
            group.write(Bytes(utf8: "line \(i)"), timestamp: UInt64(i) * 1000)
            group.write(Bytes(utf8: "more \(i)"), timestamp: UInt64(i) * 1000 + 500)
            group.finish()
            try await Task.sleep(for: .milliseconds(2))
        }
        track.finish()
        let received = try await readAll(remote.consumer())
        // The Rust relay decides where the downstream subscription starts (under load, a few groups
        // in); from there on every frame arrives intact and in order.
        let first = Int(received.first?.0 ?? 50)
        #expect(first <= 40, "started at group \(first): fewer than 10 groups to compare")
        let texts: [String] = received.map { String(decoding: $0.3, as: UTF8.self) }
        let expectedTexts: [String] = (first..<50).flatMap { ["line \($0)", "more \($0)"] }
        #expect(texts == expectedTexts)
        let stamps: [UInt64] = received.map(\.2)
        let expectedStamps: [UInt64] = (first..<50).flatMap { [UInt64($0) * 1000, UInt64($0) * 1000 + 500] }
        #expect(stamps == expectedStamps)
    }

    @Test("10,000 groups on one subscription through the Rust relay: no stall")
    func tenThousandGroups() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("ten-thousand")
        let publisher = try await relay.connect()
        defer { publisher.close() }
        let subscriber = try await relay.connect()
        defer { subscriber.close() }
        let broadcast = BroadcastProducer(path: name)
        // A short cache keeps both sides' caches small, so memory shows only leaks.
        let track = broadcast.createTrack("audio", info: TrackInfo(priority: 80, maxAgeMs: 200, timescale: 1_000_000))
        publisher.publish(broadcast)
        try await subscriber.waitForBroadcast(name)
        let remote = subscriber.subscribe(broadcast: name, track: "audio", range: SubscriptionRange(maxLatencyMs: 200))
        let consumer = remote.consumer()
        try await eventually("the relay to subscribe upstream") { track.observerCount > 0 }

        // Lockstep: group n is written once group n-1 arrived. Groups written in a burst
        // travel newest-first (moq-lite's rule) and the Rust relay then drops the older
        // ones it receives after a newer one; a live source never bursts like that.
        var received = 0
        let start = ContinuousClock.now
        for n in 0..<10_000 {
            let elapsed = (ContinuousClock.now - start).nanoseconds / 1000
            track.writeSingleFrameGroup(Bytes(utf8: "packet \(n)"), timestamp: elapsed)
            guard let group = try await consumer.nextGroup() else { break }
            if group.sequence != UInt64(n) {
                Issue.record("expected group \(n), got \(group.sequence)")
                break
            }
            let frame = try await group.nextFrame()
            #expect(frame?.payload == Bytes(utf8: "packet \(n)"))
            received += 1
        }
        #expect(received == 10_000)
        #expect(consumer.groupsSkipped == 0)
        let stats = try await subscriber.stats()
        #expect(stats.counters.groupsReceived == 10_000)
    }

    static let memoryGroups = Int(ProcessInfo.processInfo.environment["SWIFTMOQ_MEMORY_GROUPS"] ?? "10000")!

    @Test("10,000 groups into a subscriber process: its memory stays flat")
    func flatSubscriberMemory() async throws {
        // The subscriber is its own process (swiftmoq subscribe-track) so that its RSS is
        // not mixed with the other tests running in this one.
        let server = try MoqServer.listen()
        defer { server.close() }
        let broadcast = BroadcastProducer(path: "memory")
        let track = broadcast.createTrack("audio", info: TrackInfo(priority: 80, maxAgeMs: 200, timescale: 1_000_000))
        server.origin.publish(broadcast)
        let subscriber = try CLI.start([
            "subscribe-track", "--url", "moql://127.0.0.1:\(server.port)/", "--tls-fingerprint", server.fingerprint,
            "--broadcast", "memory", "--track", "audio", "--count", "\(Self.memoryGroups)", "--max-latency-ms", "5000",
        ])
        try await eventually("the subscription") { track.observerCount > 0 }
        var warm = 0
        let start = ContinuousClock.now
        for batch in 0..<(Self.memoryGroups / 100) {
            for i in 0..<100 {
                let n = batch * 100 + i
                let elapsed = (ContinuousClock.now - start).nanoseconds / 1000
                track.writeSingleFrameGroup(Bytes(utf8: "packet \(n)"), timestamp: elapsed)
            }
            let target = (batch + 1) * 100
            try await eventually("group \(target)", timeout: .seconds(30)) {
                subscriber.stdoutLineCount >= target
            }
            if batch == 29 { warm = subscriber.residentBytes }
        }
        let growth = subscriber.residentBytes - warm
        let result = try await subscriber.wait(timeout: .seconds(10))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines.count == Self.memoryGroups)
        #expect(result.stdoutLines.last == "packet \(Self.memoryGroups - 1)")
        // 7,000 groups after warm-up: a per-stream leak like ngtcp2 0.12.1's (~210 B) would add ~1.5 MB.
        // (Measured here: ~20 KB. SWIFTMOQ_MEMORY_GROUPS=50000 runs it longer.)
        #expect(growth < 1_000_000, "the subscriber's RSS grew by \(growth) bytes after warm-up")
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// Lifecycle, cache and limits of the Swift relay, with Swift clients.
@Suite("Swift relay behaviour", .serialized, .timeLimit(.minutes(2)))
struct RelayBehaviourTests {
    final class LogLines: @unchecked Sendable {
        let lines = Lock<[String]>([])
        var logger: MoqLogger { MoqLogger(level: .debug) { [self] _, text in lines.withLock { $0.append(text) } } }
        func contains(_ text: String) -> Bool { lines.withLock { $0.contains { $0.contains(text) } } }
    }

    static func start(_ configure: (inout MoqRelay.Configuration) -> Void = { _ in }) throws -> MoqRelay {
        try RelayTests.relay(logger: .silent, configure: configure)
    }

    static func connect(_ relay: MoqRelay, _ path: String = "anon") async throws -> MoqSession {
        try await RelayTests.connect(relay, path)
    }

    @Test("one upstream subscription per track, torn down after the last subscriber leaves")
    func upstreamLifecycle() async throws {
        let relay = try Self.start()
        let publisher = try await Self.connect(relay)
        let a = try await Self.connect(relay)
        let b = try await Self.connect(relay)
        let broadcast = BroadcastProducer(path: "cam")
        let track = broadcast.createTrack("video")
        publisher.publish(broadcast)
        try await a.waitForBroadcast("cam")
        let ra = a.subscribe(broadcast: "cam", track: "video", range: SubscriptionRange(maxLatencyMs: 1000))
        let rb = b.subscribe(broadcast: "cam", track: "video", range: SubscriptionRange(maxLatencyMs: 1000))
        try await eventually("the upstream subscription") { track.observerCount == 1 }
        #expect(relay.upstreamSubscriptionCount == 1)
        ra.cancel()
        rb.cancel()
        // Both sides, together: the publisher's count alone can pass through 0 for a moment before
        // (between the relay's TRACK request and its SUBSCRIBE, each observing the track).
        try await eventually("the upstream subscription to close", timeout: .seconds(10)) {
            track.observerCount == 0 && relay.upstreamSubscriptionCount == 0
        }
        for s in [publisher, a, b] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("a publisher that disconnects resets its subscribers' tracks with INTERNAL")
    func publisherGone() async throws {
        let relay = try Self.start()
        let broadcast = BroadcastProducer(path: "cam")
        let (publisher, subscriber, track, remote) = try await relayedTrack(
            relay, publishing: broadcast, maxLatencyMs: 1000)
        try await eventually("the upstream subscription") { track.observerCount == 1 }
        track.writeSingleFrameGroup(Bytes(utf8: "x"), timestamp: 0)
        publisher.close()
        try await eventually("the reset") { remote.track.end != nil }
        #expect(remote.track.end == .aborted(.internal))
        if remote.track.end != .aborted(.internal) {
            let reasons =
                "subscriber: \(String(describing: subscriber.closeReason)), "
                + "publisher: \(String(describing: publisher.closeReason))"
            Issue.record("\(reasons)")
        }
        subscriber.close()
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("FETCH is served from the relay's cache")
    func fetchFromCache() async throws {
        let relay = try Self.start()
        let broadcast = BroadcastProducer(path: "cam")
        let (publisher, subscriber, track, remote) = try await relayedTrack(
            relay, publishing: broadcast, info: TrackInfo(maxAgeMs: 60_000), maxLatencyMs: 60_000)
        try await eventually("the upstream subscription") { track.observerCount == 1 }
        for g in 0..<3 {
            let group = track.appendGroup()
            group.write(Bytes(utf8: "g\(g)a"), timestamp: 0)
            group.write(Bytes(utf8: "g\(g)b"), timestamp: 1)
            group.finish()
        }
        try await eventually("the groups at the subscriber") { remote.track.latestSequence == 2 }
        let frames = try await subscriber.fetch(broadcast: "cam", track: "video", group: 1)
        #expect(frames.map { String(decoding: $0.payload.array, as: UTF8.self) } == ["g1a", "g1b"])
        await #expect(throws: MoqError.self) {
            _ = try await subscriber.fetch(broadcast: "cam", track: "audio", group: 0)
        }
        for s in [publisher, subscriber] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("the cache stays within its byte budget")
    func cacheBudget() async throws {
        let relay = try Self.start { $0.cacheBytes = 100_000 }
        let broadcast = BroadcastProducer(path: "big")
        let (publisher, subscriber, track, remote) = try await relayedTrack(
            relay, publishing: broadcast, info: TrackInfo(maxAgeMs: 60_000), maxLatencyMs: 60_000)
        let consumer = remote.consumer(maxLatencyMs: 60_000)
        try await eventually("the upstream subscription") { track.observerCount == 1 }
        for i in 0..<40 {
            track.writeSingleFrameGroup(Bytes([UInt8](repeating: UInt8(i), count: 10_000)), timestamp: UInt64(i))
            _ = try await consumer.nextGroup()
            #expect(relay.cache.bytes <= 100_000 + 10_000)
        }
        for s in [publisher, subscriber] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("hitting a per-session limit is logged and refuses only the extra request")
    func limitsAreLogged() async throws {
        let log = LogLines()
        let relay = try Self.start {
            $0.limits.maxServedSubscriptions = 1
            $0.logger = log.logger
        }
        let publisher = try await Self.connect(relay)
        let subscriber = try await Self.connect(relay)
        let broadcast = BroadcastProducer(path: "cam")
        broadcast.createTrack("a")
        broadcast.createTrack("b")
        publisher.publish(broadcast)
        try await subscriber.waitForBroadcast("cam")
        let first = subscriber.subscribe(broadcast: "cam", track: "a")
        let second = subscriber.subscribe(broadcast: "cam", track: "b")
        try await eventually("the refusal") { second.track.end != nil }
        #expect(second.track.end == .aborted(.internal))
        #expect(first.track.end == nil)
        #expect(log.contains("subscription limit reached"))
        for s in [publisher, subscriber] { s.close() }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("shutdown sends GOAWAY to every session")
    func goawayOnShutdown() async throws {
        let relay = try Self.start()
        let client = try await Self.connect(relay)
        await relay.shutdown(grace: .seconds(1))
        _ = try await withTimeout("the client to be closed", .seconds(15)) { try await client.closed() }
        #expect(client.goawayURI == "")
    }
}

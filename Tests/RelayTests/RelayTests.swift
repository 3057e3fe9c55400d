// SPDX-License-Identifier: MIT
import Foundation
import MoqTestKit
import Testing

@testable import SwiftMoQ

/// The Swift relay with Swift clients (the Rust clients are in InteropTests).
@Suite("Swift relay", .serialized, .timeLimit(.minutes(2)))
struct RelayTests {
    static func relay(
        auth: RelayAuth = RelayAuth(publicPrefixes: [""]),
        logger: MoqLogger = .standardError(level: .debug, label: "relay"),
        configure: (inout MoqRelay.Configuration) -> Void = { _ in }
    ) throws -> MoqRelay {
        var config = MoqRelay.Configuration(host: "127.0.0.1", port: 0, auth: auth, logger: logger)
        configure(&config)
        return try MoqRelay.start(config)
    }

    static func connect(_ relay: MoqRelay, _ path: String = "anon") async throws -> MoqSession {
        try await relay.connectClient(path: path)
    }

    @Test("a session without the right token is refused with UNAUTHORIZED")
    func refusal() async throws {
        let relay = try Self.relay(auth: RelayAuth(publicPrefixes: ["anon"]))
        await #expect {
            _ = try await Self.connect(relay, "secret")
        } throws: { error in
            print("REFUSAL:", error)
            guard let e = error as? MoqError, case .refused(let code, _) = e else { return false }
            return code == SessionErrorCode.unauthorized.rawValue
        }
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test(
        "the relay subscribes upstream with its first subscriber's budget: a live-edge player gets the newest group first"
    )
    func upstreamFollowsDemand() async throws {
        let relay = try Self.relay()
        let publisher = try await Self.connect(relay)
        let subscriber = try await Self.connect(relay)
        let broadcast = BroadcastProducer(path: "backlog")
        let track = broadcast.createTrack("video", info: TrackInfo(maxAgeMs: 30_000))
        publisher.publish(broadcast)
        // 30 groups 100 ms apart already cached at the publisher (a publisher that reconnected
        // after an outage), and the track still live.
        for g in 0..<30 { track.writeSingleFrameGroup(Bytes(utf8: "g\(g)"), timestamp: UInt64(g) * 100_000) }
        try await subscriber.waitForBroadcast("backlog")
        let remote = subscriber.subscribe(
            broadcast: "backlog", track: "video", range: SubscriptionRange(maxLatencyMs: 0))
        let consumer = remote.consumer(maxLatencyMs: 0)
        let first = try #require(try await consumer.nextGroup())
        #expect(first.sequence == 29)
        // The upstream subscription moved from the relay's default to this subscriber's budget; a
        // later subscriber that wants more raises it, one that wants less does not lower it.
        try await eventually("the upstream budget to follow the first subscriber") { relay.upstreamBudgetsMs == [0] }
        let wider = subscriber.subscribe(
            broadcast: "backlog", track: "video", range: SubscriptionRange(maxLatencyMs: 5_000))
        try await eventually("a wider subscriber to raise it") { relay.upstreamBudgetsMs == [5_000] }
        let narrower = subscriber.subscribe(
            broadcast: "backlog", track: "video", range: SubscriptionRange(maxLatencyMs: 1_000))
        try await Task.sleep(for: .milliseconds(200))  // under test: the budget must not move meanwhile
        #expect(relay.upstreamBudgetsMs == [5_000])
        wider.cancel()
        narrower.cancel()
        publisher.close()
        subscriber.close()
        await relay.shutdown(grace: .milliseconds(100))
    }

    @Test("a finished track published before the subscriber joined arrives whole")
    func cachedTrackThroughRelay() async throws {
        let relay = try Self.relay()
        let publisher = try await Self.connect(relay)
        let subscriber = try await Self.connect(relay)
        let broadcast = BroadcastProducer(path: "demo")
        let track = broadcast.createTrack("chat")
        publisher.publish(broadcast)
        for line in ["a", "b", "c"] { track.writeSingleFrameGroup(Bytes(utf8: line), timestamp: 0) }
        track.finish()
        try await subscriber.waitForBroadcast("demo")
        let remote = subscriber.subscribe(
            broadcast: "demo", track: "chat", range: SubscriptionRange(maxLatencyMs: 10_000))
        var got: [String] = []
        let consumer = remote.consumer(maxLatencyMs: 10_000)
        while let g = try await consumer.nextGroup() {
            while let f = try await g.nextFrame() { got.append(String(decoding: f.payload.array, as: UTF8.self)) }
        }
        #expect(got == ["a", "b", "c"])
        publisher.close()
        subscriber.close()
        await relay.shutdown(grace: .milliseconds(100))
    }
}

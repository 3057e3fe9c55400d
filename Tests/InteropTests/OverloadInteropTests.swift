// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqSession
import SwiftMoQ
import Testing

/// A publisher faster than its subscribers, open loop: the relay never ends a subscriber's
/// session for being slow, delivers what is within its budget, and drops only what falls out
/// of it.
///
/// A subscriber behind the live edge gets the newest group first and the backlog after it
/// (moq-lite's order, ``ServedSubscription.nextQueuedIndex()``; moq-relay does the same), so
/// the Rust subscriber reads in arrival order: its `next_group` keeps sequence order by skipping
/// every group that lands behind one it already returned, which would count the relay's
/// backlog as lost whenever the subscriber falls behind (2 of 25 runs, 58 of 1500 delivered).
@Suite("Interop: an unthrottled publisher through the Swift relay", .serialized, .timeLimit(.minutes(4)), .peersStopped)
struct OverloadInteropTests {
    static let groups = 1500
    static let size = 100_000

    /// An unthrottled moq-rs publisher of `groups` single-frame groups of 100 kB, timestamped
    /// with the wall clock, writing once its track is subscribed.
    static func flood(_ relay: SwiftRelay, _ name: String) throws -> RustPeer {
        try RustPeer.launch(
            ["publish"] + relay.client() + [
                "--broadcast", name, "--groups", "\(groups)", "--frames-per-group", "1", "--payload-size", "\(size)",
                "--interval-ms", "0", "--wait-subscriber", "--wallclock-timestamps",
                // moq-ffi has no drain: stay connected until the test is done (it stops the publisher).
                "--linger-ms", "60000",
            ])
    }

    @Test(
        "moq-rs publisher → Swift relay → moq-rs subscriber, 1500 × 100 kB as fast as possible: session kept, ≥ 97 % delivered once"
    )
    func rustSubscriber() async throws {
        let relay = try SwiftRelay.start()
        let name = RustPeer.uniqueName("flood")
        let subscriber = try RustPeer.launch(
            ["subscribe"] + relay.client() + [
                "--broadcast", name, "--max-latency-ms", "10000", "--summary", "--timeout-s", "90",
                "--order", "arrival",
            ])
        defer { subscriber.terminateInBackground() }
        let publisher = try Self.flood(relay, name)
        defer { publisher.terminateInBackground() }
        let summary = try await subscriber.waitFor(event: "summary", timeout: .seconds(90))
        let groups = summary.array("groups") ?? []
        #expect(groups.count * 100 >= Self.groups * 97, "delivered \(groups.count) of \(Self.groups)")
        #expect(Set(groups).count == groups.count, "a group delivered twice")
        let kinds = summary["group_error_kinds"].map { "\($0)" } ?? "none"
        #expect(summary.int("group_errors") == 0, "group errors by kind: \(kinds)")
        // The session ended because the track did, not because of an error.
        _ = try await subscriber.waitFor(event: "end", timeout: .seconds(10))
        #expect(try await subscriber.waitForExit(timeout: .seconds(20)) == 0)
        await relay.stop()
    }

    @Test("moq-rs publisher → Swift relay → Swift subscriber, the same flood: ≥ 97 % in order")
    func swiftSubscriber() async throws {
        let relay = try SwiftRelay.start()
        let name = RustPeer.uniqueName("flood")
        let session = try await relay.connect()
        defer { session.close() }
        let publisher = try Self.flood(relay, name)
        defer { publisher.terminateInBackground() }
        try await session.waitForBroadcast(name, timeout: .seconds(30))
        // The subscriber's own cache holds what its budget asks for (150 MB may arrive before
        // this test reads it; the default bound per track is 64 MiB): what is measured is the relay.
        let track = TrackProducer(name: "data", info: nil, limits: CacheLimits(maxBytes: 512 << 20))
        let remote = session.subscribe(
            broadcast: name, range: SubscriptionRange(maxLatencyMs: 10_000), into: track)
        let consumer = remote.consumer(maxLatencyMs: 10_000)
        var received: [UInt64] = []
        while let group = try await consumer.nextGroup() {
            var frames = 0
            while let frame = try await group.nextFrame() {
                frames += 1
                #expect(frame.payload.count == Self.size)
            }
            if frames > 0 { received.append(group.sequence) }
        }
        #expect(received.count * 100 >= Self.groups * 97, "delivered \(received.count) of \(Self.groups)")
        #expect(zip(received, received.dropFirst()).allSatisfy { $0 < $1 })
        #expect(session.closeReason == nil)
        await relay.stop()
    }
}

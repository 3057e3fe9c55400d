// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// SUBSCRIBE's and FETCH's frame bounds, served alike by moq-dev's relay (moq-ffi 0.4.18) and
/// ours, each fed by a Rust publisher: a frame start qualifies only the start group (a later
/// group starts at its first frame), a frame end only the end group, a frame end without an end
/// group is refused, and so is a FETCH whose range ends before it starts. The PyPI subscriber
/// cannot send frame bounds (its `Subscription` has group bounds only), so the Rust side of the
/// frame rules is the relay's serving; its group bounds are checked through both relays too.
@Suite("Interop: subscription ranges", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct SubscriptionRangeInteropTests {
    /// A Rust publisher writing groups of four frames `g{g}f{f}`, one group about every 100 ms.
    static func publish(_ client: [String], name: String) throws -> RustPeer {
        try RustPeer.launch(
            ["publish"] + client + [
                "--broadcast", name, "--groups", "0", "--frames-per-group", "4", "--frame-interval-ms", "20",
                "--interval-ms", "20", "--max-age-ms", "60000",
            ])
    }

    /// The frames of `groups` once they all finished (or the track ended), as `g{g}f{f}` tags.
    static func groups(_ track: TrackProducer, _ groups: ClosedRange<UInt64>) async throws -> [[String]] {
        func finished() -> Bool {
            groups.allSatisfy { s in
                track.groups(from: s).first { $0.sequence == s }.map { track.frames(of: $0, from: 0).status != .open }
                    ?? false
            }
        }
        try await eventually("groups \(groups) of the subscription", timeout: .seconds(20)) {
            finished() || track.snapshot(from: 0).end != nil
        }
        return track.groups(from: groups.lowerBound).filter { groups.contains($0.sequence) }.map { g in
            track.frames(of: g, from: 0).frames.map { String(decoding: $0.payload.array, as: UTF8.self) }
        }
    }

    static func tags(_ g: UInt64, _ frames: ClosedRange<Int>) -> [String] { frames.map { "g\(g)f\($0)" } }

    /// Every frame-bound rule, through the relay `session` is connected to.
    ///
    /// `endCutsLastGroup`: moq-dev's relay may end the subscription as the group past the end
    /// reaches it, while its forwarding of the last group in range is still behind (seen once in
    /// CI under ThreadSanitizer: `g65f0 g65f1` then the end, with publisher, relay and subscriber all
    /// Rust) — then the last group in range may be a prefix of itself there. Ours ends a bounded
    /// subscription only after the groups in range were delivered.
    func checkRules(
        client: [String], endCutsLastGroup: Bool = false, connect: () async throws -> MoqSession
    ) async throws {
        let name = RustPeer.uniqueName("range")
        let publisher = try Self.publish(client, name: name)
        defer { publisher.terminateInBackground() }
        let session = try await connect()
        defer { session.close() }
        try await session.waitForBroadcast(name, timeout: .seconds(30))
        let live = session.subscribe(broadcast: name, track: "data")
        defer { live.cancel() }
        _ = try await readAll(live.consumer(), limit: 1)
        func latest() -> UInt64 { live.track.snapshot(from: 0).latest?.sequence ?? 0 }
        func subscribe(_ range: (UInt64) -> SubscriptionRange) -> (RemoteTrack, UInt64) {
            let l = latest()
            return (session.subscribe(broadcast: name, track: "data", range: range(l)), l)
        }

        // A frame start qualifies only its group: the next groups start at their keyframe.
        let (a, la) = subscribe { SubscriptionRange(maxLatencyMs: 10_000, groupStart: $0 + 2, frameStart: 1) }
        #expect(
            try await Self.groups(a.track, la + 2...la + 4) == [
                Self.tags(la + 2, 1...3), Self.tags(la + 3, 0...3), Self.tags(la + 4, 0...3),
            ])
        a.cancel()

        // The same from the cache (a start in the past).
        let (e, le) = subscribe { SubscriptionRange(maxLatencyMs: 10_000, groupStart: $0 - 2, frameStart: 1) }
        #expect(
            try await Self.groups(e.track, le - 2...le) == [
                Self.tags(le - 2, 1...3), Self.tags(le - 1, 0...3), Self.tags(le, 0...3),
            ])
        e.cancel()

        // A frame end qualifies only the end group.
        let (b, lb) = subscribe {
            SubscriptionRange(maxLatencyMs: 10_000, groupStart: $0 + 2, groupEnd: $0 + 4, frameEnd: 1)
        }
        #expect(
            try await Self.groups(b.track, lb + 2...lb + 4) == [
                Self.tags(lb + 2, 0...3), Self.tags(lb + 3, 0...3), Self.tags(lb + 4, 0...1),
            ])
        b.cancel()

        // Both bounds in one group.
        let (c, lc) = subscribe {
            SubscriptionRange(maxLatencyMs: 10_000, groupStart: $0 + 2, groupEnd: $0 + 2, frameStart: 1, frameEnd: 2)
        }
        #expect(try await Self.groups(c.track, lc + 2...lc + 2) == [Self.tags(lc + 2, 1...2)])
        c.cancel()

        // A start resolved past the group asked for (zero budget: the newest) starts at frame 0.
        let (h, _) = subscribe { _ in SubscriptionRange(maxLatencyMs: 0, groupStart: 0, frameStart: 1) }
        let first = try await readAll(h.consumer(), limit: 1)
        #expect(first.first.map { String(decoding: $0.3, as: UTF8.self) } == "g\(first.first?.0 ?? 0)f0")
        h.cancel()

        // A frame end without an end group is refused (the request stream is reset): no frames.
        let (g, _) = subscribe { SubscriptionRange(maxLatencyMs: 10_000, groupStart: $0 + 2, frameEnd: 1) }
        try await eventually("the refusal") { g.track.snapshot(from: 0).end != nil }
        #expect(g.track.snapshot(from: 0).groups.isEmpty)
        if case .aborted = g.track.snapshot(from: 0).end {
        } else {
            Issue.record("not reset: \(String(describing: g.track.snapshot(from: 0).end))")
        }

        // FETCH: a range is served exactly; one that ends before it starts is reset.
        let done = latest() - 1
        let part = try await session.fetch(broadcast: name, track: "data", group: done, frameStart: 1, frameEnd: 2)
        #expect(part.map { String(decoding: $0.payload.array, as: UTF8.self) } == Self.tags(done, 1...2))
        await #expect(throws: MoqError.self) {
            _ = try await session.fetch(broadcast: name, track: "data", group: done, frameStart: 2, frameEnd: 1)
        }

        // A Rust subscriber's group bounds: groups l+5 and l+6, whole (eight frames), then it exits.
        // When l+5 is already complete as it joins, the Swift relay must still open l+5 before l+6: moq-ffi's
        // reader skips a group that arrives after a newer one (it got l+6 only while the relay opened the live
        // edge first; a floor now opens in sequence order, `BacklogOrderTests`).
        // moq-ffi's `Subscription.group_end` is exclusive: both relays deliver the groups below it.
        let l = latest()
        let subscriber = try RustPeer.launch(
            ["subscribe"] + client + [
                "--broadcast", name, "--track", "data", "--group-start", "\(l + 5)", "--group-end", "\(l + 7)",
                "--count", "8",
            ])
        defer { subscriber.terminateInBackground() }
        // A Python process started beside the parallel suite can take long to start: wait generously,
        // and say what arrived when it does not end.
        let exited = (try? await subscriber.waitForExit(timeout: .seconds(60))) != nil
        let frames = subscriber.history.filter { $0.name == "frame" }.map {
            [$0.int("group") ?? -1, $0.int("index") ?? -1]
        }
        let whole = (5...6).flatMap { g in (0...3).map { [Int(l) + g, $0] } }
        // The first group whole, then (where the relay may cut it) at least the last group's first frame.
        let acceptable = endCutsLastGroup ? (5...whole.count).map { Array(whole.prefix($0)) } : [whole]
        // One line, frames first: CI's log keeps only the head of a long message (stop 41's tsan run
        // failed here once, and its log cut the list after the second frame).
        let events = subscriber.history.map { e in
            switch e.name {
            case "frame": "\(e.int("group") ?? -1)/\(e.int("index") ?? -1)"
            case "subscribed": "subscribed"
            default: e.line
            }
        }
        let delivered = acceptable.contains(frames)
        #expect(
            delivered,
            """
            got \(events.joined(separator: " ")) (exited \(exited), l \(l), latest now \(latest())); \
            stderr tail: \(subscriber.stderr.suffix(1500).replacingOccurrences(of: "\n", with: " | "))
            """)
    }

    @Test("moq-dev's relay serves frame bounds as our rules say")
    func rustRelay() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        try await checkRules(client: relay.client, endCutsLastGroup: true) { try await relay.connect() }
    }

    @Test("the Swift relay serves frame bounds as moq-dev's does; a Rust subscriber's group bounds too")
    func swiftRelay() async throws {
        let relay = try SwiftRelay.start()
        try await checkRules(client: relay.client()) { try await relay.connect() }
        await relay.stop()
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqSync
import MoqTestKit
import Testing

@testable import SwiftMoQ

/// Swift relays as nodes of a moq-relay cluster. moq-relay itself cannot be installed here; the
/// PyPI peer's `moq.Server` on one shared origin (`moqpeer relay`) carries moq-dev's routing code
/// (hop chains, link cost, split horizon) and is wired as moq-relay wires its cluster links.
@Suite(
    "Interop: Swift relays in a cluster with moq-dev's routing code", .serialized, .timeLimit(.minutes(4)),
    .peersStopped)
struct ClusterInteropTests {
    /// Bounds on how fast changes spread, loosened under ThreadSanitizer (instrumented relays run
    /// 5–15 times slower).
    static let slow = ProcessInfo.processInfo.environment["SWIFTMOQ_TSAN"] == "1"

    static func link(_ url: String, fingerprint: String, cost: UInt64? = nil) throws -> PeerLink {
        PeerLink(url: try MoqURL(url), cost: cost, tls: TLSOptions(fingerprint: fingerprint))
    }

    /// A Rust publisher connected with `publisherClient` (the Rust node) is read by a Rust
    /// subscriber connected with `readerClient` (a Swift relay): 5 groups arrive within 30 s.
    static func rustPublisher(on publisherClient: [String], isReadThrough readerClient: [String]) async throws {
        let name = RustPeer.uniqueName("rust")
        let publisher = try RustPeer.launch(
            ["publish"] + publisherClient + ["--broadcast", name, "--groups", "0", "--interval-ms", "20"])
        defer { publisher.terminateInBackground() }
        let reader = try RustPeer.launch(["subscribe"] + readerClient + ["--broadcast", name, "--count", "5"])
        defer { reader.terminateInBackground() }
        #expect(try await reader.waitForExit(timeout: .seconds(30)) == 0, "\(reader.stderr)")
    }
    @Test(
        "triangle (Rust node R, S1 dials R, S2 dials S1 and R): 20 viewers on S2 of a publisher on S1 pull once over the cheaper route, move through R when S1–S2 dies, and the end spreads within 1 s; R's clients reach both"
    )
    func triangle() async throws {
        let rust = try await RustRelay.start()
        defer { rust.stop() }
        let s1 = try SwiftRelay.start {
            $0.clusterID = 11
            $0.peers = [try! Self.link(rust.url(""), fingerprint: rust.fingerprint)]
        }
        let s2 = try SwiftRelay.start {
            $0.clusterID = 12
            $0.peers = [
                try! Self.link(s1.url(""), fingerprint: s1.relay.fingerprint),
                try! Self.link(rust.url(""), fingerprint: rust.fingerprint),
            ]
        }
        let name = RustPeer.uniqueName("cluster")
        let publisher = try await s1.connect("")
        let writing = GroupedPublisher(publishing: name, on: publisher)
        defer { writing.cancel() }

        // S2 learns both routes: through S1 (publisher 1 + link 1) and through R (one more hop and link).
        try await eventually("S2 to learn both routes") { s2.relay.routes(to: name).count == 2 }
        let routes = s2.relay.routes(to: name)
        #expect(routes.map(\.costWarm) == [2, 3], "\(routes)")
        #expect(routes.first?.hops.last == 11, "the cheaper route is through S1: \(routes)")

        let (viewers, tallies) = try await watch(name, track: "data", viewers: 20) { try await s2.connect("") }
        defer {
            for v in viewers { v.close() }
            for t in tallies { t.cancel() }
        }
        try await eventually("every viewer to get 10 groups") { tallies.allSatisfy { $0.groups.count >= 10 } }
        for tally in tallies {
            let groups = tally.groups
            #expect(groups == Array((groups.first ?? 0)...(groups.last ?? 0)), "every group, in order: \(groups)")
        }
        // One upstream subscription for 20 viewers: S1 sends each group once over the link.
        #expect(s2.relay.upstreamSubscriptionCount == 1)
        let published = writing.track.latestSequence ?? 0
        let sentByS1 = await s1.relay.sessionStats().map(\.counters.groupsSent).max() ?? 0
        #expect(sentByS1 <= published + 2, "S1 sent \(sentByS1) groups for \(published + 1) published")

        // Settled: nothing more is announced anywhere for 5 s.
        let changes = Lock(0)
        let watched = [s1.relay.origin, s2.relay.origin].map { origin in
            (origin, origin.observe(prefix: "") { _ in changes.withLock { $0 += 1 } }.token)
        }
        let rustAnnounces = rust.peer.history.filter { $0.name == "announce" }.count
        try await Task.sleep(for: .seconds(5))  // under test: nothing may change while settled
        for (origin, token) in watched { origin.stopObserving(token) }
        #expect(changes.withLock { $0 } == 0, "announcements changed after settling")
        #expect(rust.peer.history.filter { $0.name == "announce" }.count == rustAnnounces)

        // R's own subscriber gets S1's broadcast.
        let rustReader = try RustPeer.launch(
            ["subscribe"] + RustPeer.clientArguments(port: rust.port, fingerprint: rust.fingerprint, path: "")
                + ["--broadcast", name, "--count", "10"])
        defer { rustReader.terminateInBackground() }
        #expect(try await rustReader.waitForExit(timeout: .seconds(30)) == 0, "\(rustReader.stderr)")

        // S1–S2 dies: the viewers move to the route through R within one group, and none sees an end.
        let before = tallies.map { $0.groups.last ?? 0 }
        s2.relay.dropLink(0)
        try await eventually("every viewer to get 5 groups through R") {
            zip(tallies, before).allSatisfy { tally, last in tally.groups.filter { $0 > last }.count >= 5 }
        }
        for (tally, last) in zip(tallies, before) {
            #expect(tally.ended == nil)
            let after = tally.groups.filter { $0 > last }
            #expect((after.first ?? .max) <= last + 2, "at most the group in flight is lost: \(after) after \(last)")
            #expect(after == after.sorted(), "in order: \(after)")
        }

        // R's publisher reaches S2.
        try await Self.rustPublisher(on: rust.client, isReadThrough: s2.client(""))

        // The publisher leaves: the announcement ends on every node within 1 s.
        writing.cancel()
        let left = ContinuousClock.now
        publisher.close()
        let bound: Duration = Self.slow ? .seconds(5) : .seconds(1)
        try await eventually("the announcement to end everywhere", timeout: .seconds(10)) {
            s1.relay.origin.broadcast(name) == nil && s2.relay.origin.broadcast(name) == nil
                && rust.peer.history.contains { event in
                    event.name == "announce" && event.fields["path"] == .string(name)
                        && event.fields["active"] == .bool(false)
                }
        }
        let spread = ContinuousClock.now - left
        #expect(spread <= bound, "the end took \(spread) to reach every node")
        await s2.stop()
        await s1.stop()
    }
    @Test(
        "the other direction: a Rust node dials a Swift relay (moq-relay's link, accepted like a client), and broadcasts cross it both ways"
    )
    func rustNodeDialsSwift() async throws {
        let s1 = try SwiftRelay.start { $0.clusterID = 21 }
        let rust = try await RustRelay.start([
            "--connect", s1.url(""), "--connect-fingerprint", s1.relay.fingerprint,
        ])
        defer { rust.stop() }
        _ = try await rust.peer.waitFor(event: "linked", timeout: .seconds(20))
        // S2 reaches S1 only through the Rust node.
        let s2 = try SwiftRelay.start {
            $0.clusterID = 22
            $0.peers = [try! Self.link(rust.url(""), fingerprint: rust.fingerprint)]
        }

        // A publisher on S1, watched on S2: S1 offered it over the link the Rust node dialled.
        let name = RustPeer.uniqueName("dialled")
        let publisher = try await s1.connect("")
        let writing = GroupedPublisher(publishing: name, on: publisher)
        defer { writing.cancel() }
        try await eventually("S2 to learn the route through the Rust node") { !s2.relay.routes(to: name).isEmpty }
        // The publisher's hop, S1's, then the Rust node's.
        let route = s2.relay.routes(to: name).first
        #expect(route?.hops.count == 3 && route?.hops[1] == 21, "\(s2.relay.routes(to: name))")
        let (viewers, tallies) = try await watch(name, track: "data", viewers: 1) { try await s2.connect("") }
        let tally = tallies[0]
        defer {
            viewers[0].close()
            tally.cancel()
        }
        try await eventually("5 groups on S2") { tally.groups.count >= 5 }
        // S1 is not offered its own broadcast back (split horizon on the Rust side, own hop here).
        #expect(s1.relay.routes(to: name).count == 1)

        // A publisher on the Rust node, read on S1 through the link it dialled.
        try await Self.rustPublisher(on: rust.client, isReadThrough: s1.client(""))
        publisher.close()
        await s2.stop()
        await s1.stop()
    }
}

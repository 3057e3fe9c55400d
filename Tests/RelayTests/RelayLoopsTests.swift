// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import Testing

@testable import MoqQUIC
@testable import SwiftMoQ

/// A relay on several event loops: sessions spread across them, frames cross from one loop's
/// sessions to another's, and a connection's packets keep reaching its loop when its address changes.
@Suite("Relay on several event loops", .serialized, .timeLimit(.minutes(2)))
struct RelayLoopsTests {
    static func relay(threads: Int, _ configure: (inout MoqRelay.Configuration) -> Void = { _ in }) throws -> MoqRelay {
        var config = MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)
        config.threads = threads
        configure(&config)
        return try MoqRelay.start(config)
    }

    static func connect(_ relay: MoqRelay, port: UInt16? = nil) async throws -> MoqSession {
        try await relay.connectClient(path: "", port: port)
    }

    /// The relay's open sessions on each loop.
    static func perLoop(_ relay: MoqRelay) -> [Int] {
        let sessions = relay.trackedSessions
        return relay.server.loops.map { loop in sessions.filter { $0.session.loop === loop }.count }
    }

    @Test("a shard's connection IDs start with a byte its steering selects, for any number of loops")
    func shardBytes() {
        for count in 1...7 {
            for index in 0..<count {
                let shard = QUICShard(index: index, count: count)
                for byte in [0, 1, 37, 128, 200, 254, 255] as [UInt8] {
                    #expect(Int(shard.firstByte(byte)) % count == index)
                }
            }
        }
        #expect(QUICShard.single.firstByte(0xAB) == 0xAB)
    }

    @Test("20 viewers and a publisher on a 2-loop relay: sessions on both loops, every viewer gets every group")
    func spread() async throws {
        try await withRelay(try Self.relay(threads: 2)) {
            (relay) async throws in
            let publisher = try await Self.connect(relay)
            let broadcast = BroadcastProducer(path: "cam")
            let track = broadcast.createTrack("video")
            publisher.publish(broadcast)
            let (viewers, tallies) = try await watch("cam", track: "video", viewers: 20, maxLatencyMs: 5_000) {
                try await Self.connect(relay)
            }
            let writing = GroupedPublisher(track)
            defer {
                writing.cancel()
                for t in tallies { t.cancel() }
            }
            try await eventually("every viewer to get 5 groups") { tallies.allSatisfy { $0.groups.count >= 5 } }
            let counts = Self.perLoop(relay)
            #expect(counts.count == 2 && counts.allSatisfy { $0 > 0 } && counts.reduce(0, +) == 21, "\(counts)")
            for tally in tallies {
                let g = tally.groups
                #expect(g == Array((g.first ?? 0)...(g.last ?? 0)), "\(g)")
            }
            for s in viewers + [publisher] { s.close() }
        }
    }

    @Test("six NAT rebindings on a 2-loop relay: the connection's packets keep reaching its loop, no session ends")
    func rebinding() async throws {
        try await withRelay(try Self.relay(threads: 2)) {
            (relay) async throws in
            let proxy = try UDPProxy.start(forwardingTo: relay.port)
            defer { proxy.stop() }
            let publisher = try await Self.connect(relay)
            let broadcast = BroadcastProducer(path: "cam")
            let track = broadcast.createTrack("video")
            publisher.publish(broadcast)
            let viewer = try await Self.connect(relay, port: proxy.port)
            try await viewer.waitForBroadcast("cam")
            let tally = GroupTally(
                viewer.subscribe(broadcast: "cam", track: "video", range: SubscriptionRange(maxLatencyMs: 5_000)))
            let writing = GroupedPublisher(track)
            defer {
                writing.cancel()
                tally.cancel()
            }
            try await eventually("the first groups") { tally.groups.count >= 3 }
            let accepted = relay.counts.withLock { $0.accepted }
            for n in 1...6 {
                let seen = tally.groups.count
                proxy.rebind()
                try await eventually("the proxy to rebind") { proxy.statistics.rebinds == n }
                // Datagrams from the new address only reach the connection if they reach its loop.
                try await eventually("groups after rebinding \(n)", timeout: .seconds(5)) {
                    tally.groups.count >= seen + 3
                }
            }
            #expect(viewer.closeReason == nil && tally.ended == nil)
            #expect(relay.counts.withLock { $0.accepted } == accepted, "no new session")
            #expect(relay.sessionCount == 2)
            viewer.close()
            publisher.close()
        }
    }

    @Test("every client must answer a Retry: a token made by one loop is accepted by the other")
    func retryAcrossLoops() async throws {
        try await scoped(
            try Self.relay(threads: 2) { $0.retryThreshold = 0 }, teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            var sessions: [MoqSession] = []
            for _ in 0..<12 { sessions.append(try await Self.connect(relay)) }
            try await eventually("12 sessions") { relay.sessionCount == 12 }
            #expect(relay.quicStats.retriesSent >= 12)
            #expect(Self.perLoop(relay).allSatisfy { $0 > 0 })
            for s in sessions { s.close() }
        }
    }
}

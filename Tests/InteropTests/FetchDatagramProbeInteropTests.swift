// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

@Suite("Interop: fetch, datagrams and probe", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct FetchDatagramProbeInteropTests {
    @Test("Swift fetches a group a Rust publisher wrote, through the Rust relay")
    func swiftFetchesFromRust() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("fetch")
        let session = try await relay.connect()
        defer { session.close() }
        let publisher = try RustPeer.launch(
            ["publish"] + relay.client + [
                "--broadcast", name, "--groups", "3", "--frames-per-group", "3", "--payload-size", "50",
                "--linger-ms", "120000", "--max-age-ms", "120000",
            ])
        defer { publisher.terminateInBackground() }
        _ = try await publisher.waitFor(event: "finished", timeout: .seconds(20))
        try await session.waitForBroadcast(name, timeout: .seconds(30))
        let frames = try await session.fetch(broadcast: name, track: "data", group: 1)
        #expect(frames.map(\.payload.array) == (0..<3).map { rustPayload(group: 1, frame: $0, size: 50) })
        #expect(frames.map(\.timestamp) == [3, 4, 5].map { UInt64($0 * 33_333) })
        await #expect(throws: MoqError.trackNotFound(broadcast: name, track: "data")) {
            _ = try await session.fetch(broadcast: name, track: "data", group: 99)
        }
    }

    @Test("Rust fetches a group a Swift publisher wrote, through the Rust relay")
    func rustFetchesFromSwift() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("fetch")
        let session = try await relay.connect()
        defer { session.close() }
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("data", info: TrackInfo(maxAgeMs: 60_000))
        for g in 0..<3 {
            let group = track.appendGroup()
            for f in 0..<2 { group.write(Bytes(utf8: "frame-\(g)-\(f)"), timestamp: UInt64(g * 2 + f) * 1000) }
            group.finish()
        }
        session.publish(broadcast)
        let fetcher = try RustPeer.launch(
            ["fetch"] + relay.client + ["--broadcast", name, "--track", "data", "--group", "2"])
        defer { fetcher.terminateInBackground() }
        let events = try await fetcher.collect(until: "end", timeout: .seconds(20))
        let payloads = events.filter { $0.name == "frame" }.compactMap { $0.bytes("payload") }.map {
            String(decoding: $0, as: UTF8.self)
        }
        #expect(payloads == ["frame-2-0", "frame-2-1"])
    }

    @Test("datagrams from a Rust publisher reach a Swift subscriber")
    func rustDatagramsToSwift() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("dg")
        let session = try await relay.connect()
        defer { session.close() }
        let publisher = try RustPeer.launch(
            ["publish-datagrams"] + relay.client + [
                "--broadcast", name, "--count", "20", "--interval-ms", "10", "--wait-subscriber",
            ])
        defer { publisher.terminateInBackground() }
        try await session.waitForBroadcast(name)
        let remote = session.subscribe(broadcast: name, track: "data", range: SubscriptionRange(maxLatencyMs: 10_000))
        let consumer = remote.consumer(maxLatencyMs: 10_000)
        var got: [UInt64] = []
        try await eventually("datagrams") {
            while case .group(let g) = consumer.poll() { got.append(g.sequence) }
            return got.count >= 15
        }
        let stats = try await session.stats()
        #expect(stats.counters.datagramsReceived > 0)
    }

    @Test("datagrams from a Swift publisher reach a Rust subscriber")
    func swiftDatagramsToRust() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("dg")
        let session = try await relay.connect()
        defer { session.close() }
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("data")
        session.publish(broadcast)
        let subscriber = try RustPeer.launch(
            ["subscribe-datagrams"] + relay.client + ["--broadcast", name, "--count", "10"])
        defer { subscriber.terminateInBackground() }
        try await eventually("the Rust subscriber") { track.observerCount > 0 }
        for i in 0..<40 {
            track.writeDatagram(Bytes(utf8: "dg-\(i)"), timestamp: UInt64(i) * 10_000)
            try await Task.sleep(for: .milliseconds(5))
            if subscriber.history.filter({ $0.name == "datagram" }).count >= 10 { break }
        }
        _ = try await subscriber.waitForExit(timeout: .seconds(20))
        let received = subscriber.history.filter { $0.name == "datagram" }
        #expect(received.count >= 10)
        #expect(try await session.stats().counters.datagramsSent > 0)
    }

    @Test("the Rust relay sends bandwidth reports on a Probe stream we open")
    func probeReports() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let session = try await relay.connect()
        defer { session.close() }
        var reports = session.probes().makeAsyncIterator()
        let first = await reports.next()
        #expect(first != nil)
    }
}

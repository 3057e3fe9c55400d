// SPDX-License-Identifier: MIT
import Foundation
import MoqCatalog
import MoqKit
import MoqSession
import MoqTestKit
import MoqWire
import SwiftMoQ
import Testing

/// Collects an async stream's elements on a task.
final class Collected<T: Sendable>: Sendable {
    private let items = SyncBox<[T]>([])
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<T>) {
        let items = self.items
        task = Task { for await item in stream { items.mutate { $0.append(item) } } }
    }

    var all: [T] { items.value }
    func cancel() { task.cancel() }
    func finished() async { await task.value }
}

/// A value behind a lock.
final class SyncBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func mutate(_ change: (inout T) -> Void) { lock.withLock { change(&stored) } }
}

extension TestRelay {
    var sessionOptions: SessionOptions { SessionOptions(tls: TLSOptions(fingerprint: fingerprint)) }
}

/// Publishes a broadcast with a hand-written catalog and a data track, through the plain session API.
struct HandPublisher {
    let session: MoqSession
    let broadcast: BroadcastProducer
    let catalog: TrackProducer

    init(_ relay: TestRelay, path: String) async throws {
        session = try await relay.connect()
        broadcast = BroadcastProducer(path: path)
        catalog = broadcast.createTrack(
            MoqCatalog.HangCatalog.trackName, info: TrackInfo(priority: 100, timescale: 1000))
        session.publish(broadcast)
    }

    func publish(_ c: MoqCatalog.HangCatalog) { catalog.writeSingleFrameGroup(Bytes(c.jsonBytes()), timestamp: 0) }

    func close() {
        broadcast.close()
        session.close()
    }
}

@Suite("MoqKit Session: states, discovery, catalogs, raw tracks", .serialized, .timeLimit(.minutes(2)))
struct SessionTests {
    @Test("state: idle → connecting → connected → closed; connect() twice is refused")
    func states() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            let states = Collected(session.state)
            try await session.connect()
            await #expect(throws: SessionError.alreadyConnected) { try await session.connect() }
            let stats = await session.connectionStats()
            #expect(stats?.roundTripTime != nil)
            await session.close()
            await states.finished()
            #expect(states.all == [.idle, .connecting, .connected, .closed])
        }
    }

    @Test("an unreachable relay: connect() throws connectionFailed; state ends error → closed")
    func unreachable() async throws {
        let session = Session(
            url: "moql://127.0.0.1:9/anon", options: SessionOptions(tls: TLSOptions(disableVerify: true)))
        let states = Collected(session.state)
        await #expect {
            try await session.connect()
        } throws: { error in
            guard case SessionError.connectionFailed(let text) = error else { return false }
            return !text.isEmpty
        }
        await states.finished()
        #expect(states.all.first == .idle && states.all.last == .closed)
        #expect(states.all.contains { if case .error = $0 { return true } else { return false } })
    }

    @Test("SessionOptions(reconnect: false): a lost relay ends the session error → closed, with no retry")
    func noReconnect() async throws {
        let relay = try TestRelay.start()
        var options = relay.sessionOptions
        options.reconnect = false
        let session = Session(url: relay.url(), options: options)
        let states = Collected(session.state)
        try await session.connect()
        await relay.stop()
        await states.finished()
        #expect(states.all.first == .idle && states.all.last == .closed)
        #expect(states.all.contains { if case .error = $0 { return true } else { return false } }, "\(states.all)")
        #expect(!states.all.dropFirst(2).contains(.connecting), "no reconnect attempt: \(states.all)")
    }

    @Test("over WebTransport: https:// (pinned) and http:// (hash fetched) sessions discover the same broadcast")
    func webTransport() async throws {
        try await withTestRelay() { (relay) async throws in
            let publisher = try await HandPublisher(relay, path: "room/wt")
            defer { publisher.close() }
            let https = relay.url().replacingOccurrences(of: "moql://", with: "https://")
            let http = relay.url().replacingOccurrences(of: "moql://", with: "http://")
            for (url, options) in [(https, relay.sessionOptions), (http, SessionOptions())] {
                let session = Session(url: url, options: options)
                try await session.connect()
                let subscription = try await session.subscribe(prefix: "room")
                var iterator = subscription.broadcasts.makeAsyncIterator()
                #expect(try #require(await iterator.next()).path == "wt", "\(url)")
                subscription.cancel()
                await session.close()
            }
        }
    }

    @Test("subscribe(prefix:) yields broadcasts relative to the prefix; one subscription per prefix")
    func discovery() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let subscription = try await session.subscribe(prefix: "room")
            await #expect(throws: SessionError.alreadySubscribed(prefix: "room")) {
                _ = try await session.subscribe(prefix: "room")
            }
            let publisher = try await HandPublisher(relay, path: "room/cam")
            defer { publisher.close() }
            var iterator = subscription.broadcasts.makeAsyncIterator()
            let broadcast = try #require(await iterator.next())
            #expect(broadcast.path == "cam")
            #expect(broadcast.absolutePath == "room/cam")
            subscription.cancel()
            try await eventually("the prefix is free again") {
                (try? await session.subscribe(prefix: "room")) != nil
            }
            await session.close()
        }
    }

    @Test("GOAWAY: the session moves to a new connection without leaving connected; the broadcast is seen again on it")
    func goaway() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            let states = Collected(session.state)
            try await session.connect()
            let subscription = try await session.subscribe(prefix: "room")
            let publisher = try await HandPublisher(relay, path: "room/cam")
            defer { publisher.close() }
            var iterator = subscription.broadcasts.makeAsyncIterator()
            let first = try #require(await iterator.next())
            let sessionsBefore = try #require(relay.relay).sessionCount
            try #require(relay.relay).goaway()
            // Broadcasts belong to a connection: the old one's end with it, the new one announces again.
            let again = try #require(await iterator.next())
            #expect(again.path == "cam")
            #expect(first.hasEnded)
            try await eventually("the old connection closed") { relay.relay?.sessionCount == sessionsBefore }
            #expect(states.all == [.idle, .connecting, .connected], "never left connected: \(states.all)")
            await session.close()
        }
    }

    @Test("catalogs(): each snapshot replaces the last, with playable tracks and reasons; it ends with the broadcast")
    func catalogs() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let subscription = try await session.subscribe(prefix: "")
            let publisher = try await HandPublisher(relay, path: "show")
            var first = MoqCatalog.HangCatalog()
            first.set("0.avc3", .video(VideoConfig(codec: "avc3.42c01e")))
            publisher.publish(first)
            var iterator = subscription.broadcasts.makeAsyncIterator()
            let broadcast = try #require(await iterator.next())
            let catalogs = Collected(broadcast.catalogs())
            try await eventually("the first catalog") { catalogs.all.count == 1 }
            var second = first
            second.set("1.opus", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
            second.set("2.theora", .video(VideoConfig(codec: "theora")))
            publisher.publish(second)
            try await eventually("the second catalog") { catalogs.all.count == 2 }
            let latest = catalogs.all[1]
            #expect(latest.videoTracks.map(\.name) == ["0.avc3", "2.theora"])
            #expect(latest.playableVideoTracks.map(\.name) == ["0.avc3"])
            #expect(latest.playableAudioTracks.map(\.name) == ["1.opus"])
            #expect(latest.videoTracks[1].unsupportedReason?.contains("theora") == true)
            publisher.close()
            await catalogs.finished()
            try await eventually("the broadcast's end (announce END)") { broadcast.hasEnded }
            await session.close()
        }
    }

    @Test("catalogUpdates(): a malformed or oversized snapshot is reported, catalogs() skips it and goes on")
    func catalogProblemsAreReported() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let subscription = try await session.subscribe(prefix: "")
            let publisher = try await HandPublisher(relay, path: "odd")
            publisher.catalog.writeSingleFrameGroup(Bytes(utf8: "{not json"), timestamp: 0)
            var iterator = subscription.broadcasts.makeAsyncIterator()
            let broadcast = try #require(await iterator.next())
            let updates = Collected(broadcast.catalogUpdates())
            let catalogs = Collected(broadcast.catalogs())
            try await eventually("the malformed snapshot reported") {
                updates.all.contains { if case .malformed = $0 { true } else { false } }
            }
            // Too large to be a catalog: refused before it is parsed.
            let huge = "{\"video\":{\"renditions\":{}},\"pad\":\"" + String(repeating: "x", count: 1 << 20) + "\"}"
            publisher.catalog.writeSingleFrameGroup(Bytes(utf8: huge), timestamp: 0)
            try await eventually("the oversized snapshot reported") {
                updates.all.contains { if case .malformed(let why) = $0 { why.contains("too large") } else { false } }
            }
            var good = MoqCatalog.HangCatalog()
            good.set("0.avc3", .video(VideoConfig(codec: "avc3.42c01e")))
            publisher.publish(good)
            try await eventually("the good catalog") { catalogs.all.count == 1 }
            #expect(catalogs.all[0].videoTracks.map(\.name) == ["0.avc3"])
            publisher.close()
            await catalogs.finished()
            await updates.finished()
            await session.close()
        }
    }

    @Test("subscribeTrack: monotonic delivery in sequence order; arrival delivery as frames land")
    func rawTracks() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let subscription = try await session.subscribe(prefix: "")
            let publisher = try await HandPublisher(relay, path: "telemetry")
            defer { publisher.close() }
            let track = publisher.broadcast.createTrack("readings", info: TrackInfo(priority: 1, maxAgeMs: 10_000))
            var iterator = subscription.broadcasts.makeAsyncIterator()
            let broadcast = try #require(await iterator.next())
            let monotonic = broadcast.subscribeTrack(name: "readings")
            let arrival = broadcast.subscribeTrack(name: "readings", delivery: .arrival)
            try await eventually("both subscriptions at the relay, and its own at the publisher") {
                relay.relay?.origin.broadcast("anon/telemetry")?.existingTrack("readings")?.observerCount ?? 0 >= 2
                    && track.observerCount >= 1
            }
            for i in 0..<5 {
                track.writeSingleFrameGroup(Bytes(utf8: "r\(i)"), timestamp: UInt64(i))
                try await Task.sleep(for: .milliseconds(20))  // pacing: one reading every 20 ms
            }
            var got: [String] = []
            for try await object in monotonic.objects {
                got.append(String(decoding: object.payload, as: UTF8.self))
                if got.count == 5 { break }
            }
            #expect(got == ["r0", "r1", "r2", "r3", "r4"])
            var arrived: [UInt64] = []
            for try await object in arrival.objects {
                arrived.append(object.groupSequence)
                if arrived.count == 5 { break }
            }
            #expect(Set(arrived) == Set(0..<5))
            monotonic.close()
            arrival.close()
            await session.close()
        }
    }
}

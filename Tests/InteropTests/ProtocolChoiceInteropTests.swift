// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqSession
import MoqtWire
import SwiftMoQ
import Testing

/// `MoqSession` over either protocol family, as ``ClientOptions/moqProtocol`` offers them: what
/// moq-dev's relay and an IETF-only server each choose, and publishing and playing over IETF MoQ
/// Transport through moq-dev's relay with moq-lite peers on the other side (the relay bridges).
@Suite("Interop: MoqSession over moq-lite or IETF MoQ Transport", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct ProtocolChoiceInteropTests {
    static let choices: [MoqProtocol] = [.ietf16, .ietf14]

    static func options(_ relay: RustRelay, _ choice: MoqProtocol) -> ClientOptions {
        var options = ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint))
        options.moqProtocol = choice
        return options
    }

    /// The ALPN a single-draft choice negotiates.
    static func alpn(_ choice: MoqProtocol) -> String { choice.ietfVersions.first?.alpn ?? "" }

    @Test(
        "auto: moq-dev's relay keeps moq-lite (raw QUIC and WebTransport), an IETF-only server gets MoQ Transport draft-16"
    )
    func autoNegotiates() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        for url in [relay.url(), "https://127.0.0.1:\(relay.port)/anon"] {
            let lite = try await MoqSession.connect(url, options: Self.options(relay, .auto))
            #expect(lite.version == "moq-lite-06" && !lite.isIETF, "\(url)")
            lite.close()
        }

        let origin = Origin()
        let server = try IETFServer.listen(versions: [.draft16, .draft14], origin: origin)
        defer { server.close() }
        let name = RustPeer.uniqueName("auto-ietf")
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("data")
        origin.publish(broadcast)
        let writer = GroupedPublisher(track, frames: 2, interval: .milliseconds(25))
        defer { writer.cancel() }
        var options = ClientOptions(tls: TLSOptions(fingerprint: server.fingerprint))
        options.moqProtocol = .auto
        let session = try await MoqSession.connect(
            MoqURL("moql://127.0.0.1:\(server.port)/anon"), options: options)
        defer { session.close() }
        #expect(session.version == "moqt-16" && session.isIETF)
        // The same API as over moq-lite: announcements, then a subscription's groups.
        try await session.waitForBroadcast(name, timeout: .seconds(10))
        let tags = try await IETFInteropTests.read(session.subscribe(broadcast: name, track: "data").track, count: 4)
        let first = try #require(tags.first.flatMap { Int($0.dropFirst().prefix { $0 != "f" }) })
        #expect(tags == (first..<first + 2).flatMap { g in (0..<2).map { "g\(g)f\($0)" } }, "\(tags)")
        // FETCH over IETF: a standalone FETCH, served from the server's cache.
        let fetched = try await session.fetch(broadcast: name, track: "data", group: UInt64(first))
        #expect(fetched.map { String(decoding: $0.payload.array, as: UTF8.self) } == ["g\(first)f0", "g\(first)f1"])
        #expect(session.closeReason == nil)
    }

    @Test(
        "MoqSession over IETF (raw QUIC, or WebTransport: wt-available-protocols) publishes through moq-dev's relay: a Rust moq-lite subscriber reads it frame for frame",
        arguments: choices.map { ($0, false) } + choices.map { ($0, true) })
    func publishes(choice: MoqProtocol, webTransport: Bool) async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("ietf-session-pub")
        let url = webTransport ? "https://127.0.0.1:\(relay.port)/anon" : relay.url()
        let session = try await MoqSession.connect(url, options: Self.options(relay, choice))
        defer { session.close() }
        #expect(session.isIETF && session.version == Self.alpn(choice))
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("data")
        session.publish(broadcast)
        let writer = GroupedPublisher(track, frames: 2, interval: .milliseconds(25))
        defer { writer.cancel() }
        await IETFInteropTests.expectRustReads(name, through: relay.client)
        #expect(session.closeReason == nil)
    }

    @Test(
        "MoqSession over IETF plays a Rust moq-lite publisher through moq-dev's relay: announced, whole groups in order",
        arguments: choices)
    func plays(choice: MoqProtocol) async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("ietf-session-sub")
        let publisher = try RustPeer.launch(
            ["publish"] + relay.client + [
                "--broadcast", name, "--groups", "0", "--frames-per-group", "3", "--interval-ms", "50",
            ])
        defer { publisher.terminateInBackground() }
        let session = try await MoqSession.connect(relay.url(), options: Self.options(relay, choice))
        defer { session.close() }
        try await session.waitForBroadcast(name, timeout: .seconds(30))  // a Python publisher can start slowly
        let tags = try await IETFInteropTests.read(session.subscribe(broadcast: name, track: "data").track, count: 9)
        let first = try #require(tags.first.flatMap { Int($0.dropFirst().prefix { $0 != "f" }) })
        #expect(tags == (first..<first + 3).flatMap { g in (0..<3).map { "g\(g)f\($0)" } }, "\(tags)")
        let stats = try await session.stats()
        #expect(stats.counters.framesReceived >= 9 && stats.counters.groupsReceived >= 3, "\(stats.counters)")
        #expect(session.closeReason == nil)
    }

    @Test(
        "MoqSession over IETF on both sides of moq-dev's relay: a publisher's groups read by a subscriber, whole (the first by a joining FETCH) and in order",
        arguments: choices)
    func bothSides(choice: MoqProtocol) async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("ietf-both")
        let publisher = try await MoqSession.connect(relay.url(), options: Self.options(relay, choice))
        defer { publisher.close() }
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("data")
        publisher.publish(broadcast)
        let writer = GroupedPublisher(track, frames: 2, interval: .milliseconds(25))
        defer { writer.cancel() }
        let player = try await MoqSession.connect(relay.url(), options: Self.options(relay, choice))
        defer { player.close() }
        try await player.waitForBroadcast(name, timeout: .seconds(10))
        // moq-dev's IETF side starts a subscriber that joins a track it already holds after the object it
        // holds (the draft's `{Largest.Group, Largest.Object + 1}`; its moq-lite side starts at the group):
        // the joining FETCH our client then asks brings the group's first objects, so the first group comes
        // whole too (without it, g0f1 came first every time, and a one-object catalog group never came).
        let tags = try await IETFInteropTests.read(player.subscribe(broadcast: name, track: "data").track, count: 6)
        let first = try #require(tags.first.flatMap { Int($0.dropFirst().prefix { $0 != "f" }) })
        #expect(tags == (first..<first + 3).flatMap { g in (0..<2).map { "g\(g)f\($0)" } }, "\(tags)")
    }

    @Test(
        "IETF on a WebSocket URL and moq-lite's TRACK_INFO over IETF say what to do; moq-dev's relay refuses a standalone FETCH"
    )
    func refusals() async throws {
        var options = ClientOptions()
        options.moqProtocol = .ietf
        for url in ["ws://127.0.0.1:1/anon"] {
            do {
                _ = try await MoqSession.connect(url, options: options)
                Issue.record("\(url) connected over IETF")
            } catch {
                #expect(error.description.contains("WebTransport") && error.description.contains("moql://"), "\(error)")
            }
        }
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let session = try await MoqSession.connect(relay.url(), options: Self.options(relay, .ietf16))
        defer { session.close() }
        await #expect(throws: MoqError.self) { try await session.trackInfo(broadcast: "b", track: "t") }
        // moq-dev serves only joining fetches: a standalone one fails (rather than hanging) and the session goes on.
        await #expect(throws: MoqError.self) { try await session.fetch(broadcast: "b", track: "t", group: 0) }
        #expect(session.closeReason == nil)
        // No PROBE in MoQ Transport: the reports' stream ends at once rather than never.
        for await _ in session.probes() { Issue.record("a probe report over IETF") }
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import MoqtSession
import MoqtWire
import Testing

@testable import SwiftMoQ

/// The Swift relay takes IETF MoQ Transport sessions on its moq-lite port: authorised by their
/// SETUP path like any session, they read what moq-lite publishers publish there, and what they
/// publish is read by moq-lite and IETF subscribers alike.
@Suite("Swift relay: IETF MoQ Transport sessions", .serialized, .timeLimit(.minutes(2)))
struct RelayIETFTests {
    static func relay(auth: RelayAuth = RelayAuth(publicPrefixes: ["anon"])) throws -> MoqRelay {
        try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, auth: auth, logger: .silent))
    }

    static func connectIETF(_ relay: MoqRelay, _ version: MoqtVersion, path: String = "anon") async throws
        -> IETFSession
    {
        try await IETFSession.connect(
            "moql://127.0.0.1:\(relay.port)/\(path)", version: version,
            options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
    }

    @Test(
        "a moq-lite publisher's track read over IETF through the Swift relay, and a moq-lite client still gets moq-lite",
        arguments: [MoqtVersion.draft16, .draft14])
    func ietfSubscriber(version: MoqtVersion) async throws {
        try await withRelay(try Self.relay()) { relay in
            let publisher = try await relay.connectClient()
            defer { publisher.close() }
            #expect(publisher.binding == .quic)
            let broadcast = BroadcastProducer(path: "room/cam")
            let track = broadcast.createTrack("data")
            publisher.publish(broadcast)
            let writer = GroupedPublisher(track, frames: 2, interval: .milliseconds(15))
            defer { writer.cancel() }
            let session = try await Self.connectIETF(relay, version)
            defer { session.close() }
            try await session.waitForBroadcast("room/cam", timeout: .seconds(10))
            let remote = session.subscribe(broadcast: "room/cam", track: "data")
            let consumer = remote.consumer()
            var tags: [String] = []
            while tags.count < 6, let group = try await consumer.nextGroup() {
                while let frame = try await group.nextFrame() {
                    tags.append(String(decoding: frame.payload.array, as: UTF8.self))
                }
            }
            let first = try #require(tags.first.flatMap { Int($0.dropFirst().prefix { $0 != "f" }) })
            #expect(Array(tags.prefix(6)) == (first..<first + 3).flatMap { g in (0..<2).map { "g\(g)f\($0)" } })
            // IETF carries no budget: the relay keeps its default upstream (a budget of 0 made a moq-lite
            // publisher drop a group still being written as soon as the next began).
            #expect(relay.upstreamBudgetsMs == [MoqRelay.upstreamRange.maxLatencyMs])
            remote.cancel()
            #expect(await session.closeReason == nil)
        }
    }

    @Test("an IETF session outside its grant is closed UNAUTHORIZED; a track it may not see does not exist")
    func ietfRefused() async throws {
        try await withRelay(try Self.relay()) { relay in
            // The refusal can cross the end of SETUP (the connect then fails) or follow it (the session closes).
            do {
                let outside = try await Self.connectIETF(relay, .draft16, path: "secret")
                try await eventually("the refusal") { await outside.closeReason != nil }
                let reason = await outside.closeReason
                if case .remote(let code, _)? = reason {
                    #expect(code == MoqtSessionError.unauthorized.rawValue)
                } else {
                    Issue.record("\(String(describing: reason))")
                }
            } catch {
                #expect("\(error)".contains("code 2"), "\(error)")
            }
            let publisher = try await relay.connectClient(path: "")  // publishes under "" → "anon/…" is not its
            defer { publisher.close() }
            let session = try await Self.connectIETF(relay, .draft16)
            defer { session.close() }
            let missing = session.subscribe(broadcast: "nothing/here", track: "data")
            try await eventually("the refusal of an unknown broadcast") { missing.track.end != nil }
            #expect(missing.error != nil)
        }
    }

    /// The first `count` frames from `consumer` as text, whole groups in order.
    static func tags(_ consumer: TrackConsumer, count: Int) async throws -> [String] {
        var tags: [String] = []
        while tags.count < count, let group = try await consumer.nextGroup() {
            while let frame = try await group.nextFrame() {
                tags.append(String(decoding: frame.payload.array, as: UTF8.self))
            }
        }
        return tags
    }

    /// Whole groups in sequence from the first tag's group.
    static func consecutive(_ tags: [String]) -> Bool {
        guard let first = tags.first.flatMap({ Int($0.dropFirst().prefix { $0 != "f" }) }) else { return false }
        return tags
            == Array((first..<first + tags.count).flatMap { g in (0..<2).map { "g\(g)f\($0)" } }.prefix(tags.count))
    }

    @Test(
        "an IETF publisher's track through the Swift relay, read by a moq-lite subscriber and an IETF one",
        arguments: [MoqtVersion.draft16, .draft14])
    func ietfPublisher(version: MoqtVersion) async throws {
        try await withRelay(try Self.relay()) { relay in
            let publisher = try await Self.connectIETF(relay, version)
            defer { publisher.close() }
            let broadcast = BroadcastProducer(path: "room/live")
            let track = broadcast.createTrack("data")
            publisher.publish(broadcast)
            let writer = GroupedPublisher(track, frames: 2, interval: .milliseconds(15))
            defer { writer.cancel() }

            let lite = try await relay.connectClient()
            defer { lite.close() }
            try await lite.waitForBroadcast("room/live", timeout: .seconds(10))
            let liteTags = try await Self.tags(
                lite.subscribe(broadcast: "room/live", track: "data").consumer(), count: 6)
            #expect(Self.consecutive(liteTags), "\(liteTags)")

            let ietf = try await Self.connectIETF(relay, .draft16)
            defer { ietf.close() }
            try await ietf.waitForBroadcast("room/live", timeout: .seconds(10))
            let ietfTags = try await Self.tags(
                ietf.subscribe(broadcast: "room/live", track: "data").consumer(), count: 6)
            #expect(Self.consecutive(ietfTags), "\(ietfTags)")

            // The publisher goes: its broadcast is withdrawn from the relay.
            publisher.close()
            try await eventually("the broadcast withdrawn") { relay.origin.broadcast("anon/room/live") == nil }
        }
    }
}

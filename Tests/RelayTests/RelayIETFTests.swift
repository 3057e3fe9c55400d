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

    /// What a moq-lite reader that checks whole groups asks for: a budget. The default (0: the newest group only)
    /// lets the relay drop a group's last frame when the next group begins first (an IETF publisher's group
    /// streams race one another; seen once in `make test`: g2f0 then g3f0).
    static let wholeGroups = SubscriptionRange(maxLatencyMs: 5_000)
    /// How long a reader waits for a group missing between two others. A publisher task held back
    /// under the parallel suite writes its groups in a burst, and the relay sends the newest first:
    /// with the default reorder window the reader moved past the older ones (CI saw g12 then g43,
    /// draft-14). Groups lost for good would still fail `consecutive` (after this wait).
    static let readerWait: UInt64 = 10_000

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
                lite.subscribe(broadcast: "room/live", track: "data", range: Self.wholeGroups).consumer(
                    maxLatencyMs: Self.readerWait), count: 6)
            #expect(Self.consecutive(liteTags), "\(liteTags)")

            let ietf = try await Self.connectIETF(relay, .draft16)
            defer { ietf.close() }
            try await ietf.waitForBroadcast("room/live", timeout: .seconds(10))
            let ietfTags = try await Self.tags(
                ietf.subscribe(broadcast: "room/live", track: "data").consumer(maxLatencyMs: Self.readerWait), count: 6)
            #expect(Self.consecutive(ietfTags), "\(ietfTags)")

            // The publisher goes: its broadcast is withdrawn from the relay.
            publisher.close()
            try await eventually("the broadcast withdrawn") { relay.origin.broadcast("anon/room/live") == nil }
        }
    }

    @Test(
        "MoqSession over IETF (protocol ietf-16 / ietf-14, raw QUIC or WebTransport) publishes and plays through the Swift relay beside moq-lite clients",
        arguments: [MoqProtocol.ietf16, .ietf14].flatMap { choice in ["moql", "https"].map { (choice, $0) } })
    func moqSessionOverIETF(choice: MoqProtocol, scheme: String) async throws {
        try await withRelay(try Self.relay()) { relay in
            // Over https:// the families go in the CONNECT (wt-available-protocols) and the relay answers one.
            let publisher = try await relay.connectClient(scheme: scheme) { $0.moqProtocol = choice }
            defer { publisher.close() }
            #expect(publisher.isIETF && publisher.version == choice.ietfVersions.first?.alpn)
            let broadcast = BroadcastProducer(path: "room/both")
            let track = broadcast.createTrack("data")
            publisher.publish(broadcast)
            let writer = GroupedPublisher(track, frames: 2, interval: .milliseconds(15))
            defer { writer.cancel() }
            // Its own broadcast is announced to it, as over moq-lite.
            try await publisher.waitForBroadcast("room/both", timeout: .seconds(10))

            let lite = try await relay.connectClient(scheme: scheme) { $0.moqProtocol = .auto }
            defer { lite.close() }
            #expect(lite.version == "moq-lite-06")  // moq-lite when both are offered (ALPN, or the client's order)
            try await lite.waitForBroadcast("room/both", timeout: .seconds(10))
            let liteTags = try await Self.tags(
                lite.subscribe(broadcast: "room/both", track: "data", range: Self.wholeGroups).consumer(
                    maxLatencyMs: Self.readerWait), count: 6)
            #expect(Self.consecutive(liteTags), "\(liteTags)")

            let player = try await relay.connectClient(scheme: scheme) { $0.moqProtocol = choice }
            defer { player.close() }
            #expect(player.isIETF)
            try await player.waitForBroadcast("room/both", timeout: .seconds(10))
            let remote = player.subscribe(broadcast: "room/both", track: "data")
            let tags = try await Self.tags(remote.consumer(maxLatencyMs: Self.readerWait), count: 6)
            #expect(Self.consecutive(tags), "\(tags)")
            // FETCH over IETF through the relay: a group from its cache; a track nobody made is not made.
            let group = try #require(tags.first.flatMap { UInt64($0.dropFirst().prefix { $0 != "f" }) })
            let fetched = try await player.fetch(broadcast: "room/both", track: "data", group: group)
            #expect(
                fetched.map { String(decoding: $0.payload.array, as: UTF8.self) } == ["g\(group)f0", "g\(group)f1"])
            await #expect(throws: MoqError.self) {
                try await player.fetch(broadcast: "room/both", track: "nope", group: 0)
            }
            let relayed = try #require(relay.origin.broadcast("anon/room/both"), "\(relay.origin.paths)")
            #expect(relayed.existingTrack("data") != nil && relayed.existingTrack("nope") == nil)
            #expect(player.closeReason == nil)
            remote.cancel()
            let stats = try await player.stats()
            #expect(stats.counters.framesReceived >= 6, "\(stats.counters)")
            // The relay's /sessions lists either family, each with its protocol.
            let json = relay.sessionsJSON()
            let ietfEntry = "\"protocol\":\"\(choice.ietfVersions.first?.alpn ?? "")\""
            #expect(json.contains(ietfEntry) && json.contains("\"protocol\":\"moq-lite-06\""), "\(json)")
            // Each IETF entry says its carrier.
            let transport = scheme == "https" ? "WebTransport" : "QUIC"
            let entries = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [[String: Any]] ?? []
            let ietfCarriers = entries.filter { ($0["protocol"] as? String) == choice.ietfVersions.first?.alpn }
                .compactMap { $0["transport"] as? String }
            #expect(ietfCarriers == [transport, transport], "\(json)")
            player.close()
            // What an IETF session did stays in the relay's totals when it goes (/metrics).
            try await eventually("the player's figures kept", detail: { "\(relay.closedTotals.counters)" }) {
                relay.closedTotals.counters.framesSent >= 6
            }
            #expect(try await player.closed() == .local(.cancel, ""))
            #expect(player.finalStats != nil)
        }
    }

    @Test(
        "an IETF publisher's PUBLISH_NAMESPACE outside its token's grant is refused (the core answers UNAUTHORIZED); what the grant covers is relayed"
    )
    func publishOutsideGrant() async throws {
        let auth = RelayAuth(publicPrefixes: ["anon"], key: OwnershipTests.key)
        try await withRelay(try Self.relay(auth: auth)) { relay in
            let token = OwnershipTests.token(root: "room", put: ["alice"])
            let publisher = try await relay.connectClient(path: "room") {
                $0.authToken = token
                $0.moqProtocol = .ietf16
            }
            defer { publisher.close() }
            #expect(publisher.isIETF)
            publisher.publish(BroadcastProducer(path: "bob/cam"))
            publisher.publish(BroadcastProducer(path: "alice/cam"))
            try await eventually("alice's broadcast relayed") { relay.origin.broadcast("room/alice/cam") != nil }
            #expect(relay.origin.broadcast("room/bob/cam") == nil)
            #expect(publisher.closeReason == nil)
        }
    }

    @Test("moq-lite's bounds become MoQ Transport filters: no bounds is the live edge")
    func rangesAsFilters() {
        #expect(IETFClientCore.filter(SubscriptionRange()) == .largestObject)
        #expect(IETFClientCore.filter(SubscriptionRange(maxLatencyMs: 500)) == .largestObject)
        #expect(
            IETFClientCore.filter(SubscriptionRange(groupStart: 7, frameStart: 2))
                == .absoluteStart(Location(group: 7, object: 2)))
        #expect(
            IETFClientCore.filter(SubscriptionRange(groupStart: 3, groupEnd: 9))
                == .absoluteRange(Location(group: 3, object: 0), endGroup: 9))
        #expect(
            IETFClientCore.filter(SubscriptionRange(groupEnd: 4))
                == .absoluteRange(Location(group: 0, object: 0), endGroup: 4))
    }
}

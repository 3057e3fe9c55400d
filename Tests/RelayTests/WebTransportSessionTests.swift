// SPDX-License-Identifier: MIT
import Foundation
import MoqTestKit
import Testing

@testable import SwiftMoQ

@Suite("Sessions over WebTransport (https:// and http://) through the Swift relay", .timeLimit(.minutes(1)))
struct WebTransportSessionTests {
    static func connect(
        _ relay: MoqRelay, _ scheme: String = "https", _ path: String = "anon", pinned: Bool = true,
        token: String? = nil
    ) async throws -> MoqSession {
        try await relay.connectClient(path: path, scheme: scheme) { options in
            if !pinned { options.tls = TLSOptions() }
            options.authToken = token
            options.connectTimeout = .seconds(5)
        }
    }

    /// Publishes three lines on `publisher` and reads them back on `subscriber`.
    static func roundTrip(_ publisher: MoqSession, _ subscriber: MoqSession, _ path: String) async throws -> [String] {
        let broadcast = BroadcastProducer(path: path)
        let track = broadcast.createTrack("chat")
        publisher.publish(broadcast)
        for line in ["a", "b", "c"] { track.writeSingleFrameGroup(Bytes(utf8: line), timestamp: 0) }
        track.finish()
        try await subscriber.waitForBroadcast(path)
        let remote = subscriber.subscribe(
            broadcast: path, track: "chat", range: SubscriptionRange(maxLatencyMs: 10_000))
        var got: [String] = []
        let consumer = remote.consumer(maxLatencyMs: 10_000)
        while let g = try await consumer.nextGroup() {
            while let f = try await g.nextFrame() { got.append(String(decoding: f.payload.array, as: UTF8.self)) }
        }
        return got
    }

    @Test("an https:// publisher and an https:// subscriber, pinned, through the relay")
    func httpsBothWays() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            let publisher = try await Self.connect(relay)
            let subscriber = try await Self.connect(relay)
            #expect(try await Self.roundTrip(publisher, subscriber, "wt") == ["a", "b", "c"])
            publisher.close()
            subscriber.close()
        }
    }

    @Test("raw QUIC and WebTransport sessions meet on one port")
    func mixed() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            let publisher = try await RelayTests.connect(relay)
            let subscriber = try await Self.connect(relay)
            #expect(try await Self.roundTrip(publisher, subscriber, "mixed") == ["a", "b", "c"])
            let wtPublisher = try await Self.connect(relay)
            let rawSubscriber = try await RelayTests.connect(relay)
            #expect(try await Self.roundTrip(wtPublisher, rawSubscriber, "mixed2") == ["a", "b", "c"])
            for s in [publisher, subscriber, wtPublisher, rawSubscriber] { s.close() }
        }
    }

    @Test("an https:// publisher racing both transports at once: the losing arm announces nothing, takes nothing")
    func racingPublisher() async throws {
        let log = RelayBehaviourTests.LogLines()
        try await withRelay(try RelayTests.relay(logger: log.logger)) {
            (relay) async throws in
            let publisher = try await relay.connectClient(path: "anon", scheme: "https") { options in
                options.webSocketDelay = .zero
                options.connectTimeout = .seconds(5)
            }
            let broadcast = BroadcastProducer(path: "raced")
            publisher.publish(broadcast)
            try await eventually("the broadcast at the relay") { relay.origin.broadcast("anon/raced") != nil }
            let announced = relay.origin.broadcast("anon/raced")
            // Both arms reach the relay (the same port serves both); the one that lost closes itself.
            try await eventually("the losing arm closed", timeout: .seconds(10)) {
                log.lines.withLock { $0.filter { $0.contains("): closed (") }.count } >= 1
            }
            // Had the loser served the origin, its announce would have moved the broadcast to it (the same
            // grant again reads as a publisher that came back), and its close unannounced it.
            #expect(relay.origin.broadcast("anon/raced") === announced)
            let subscriber = try await RelayTests.connect(relay)
            #expect(try await Self.roundTrip(publisher, subscriber, "raced2") == ["a", "b", "c"])
            publisher.close()
            subscriber.close()
        }
    }

    @Test("http:// fetches the relay's certificate hash over TCP and pins it")
    func httpFetchesTheHash() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            let publisher = try await Self.connect(relay, "http", pinned: false)
            let subscriber = try await Self.connect(relay, "http", pinned: false)
            #expect(try await Self.roundTrip(publisher, subscriber, "fetched") == ["a", "b", "c"])
            publisher.close()
            subscriber.close()
        }
    }

    @Test("https:// without a pin verifies with the system CAs: a self-signed relay is refused with a clear error")
    func httpsVerifiesByDefault() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            await #expect {
                _ = try await Self.connect(relay, pinned: false)
            } throws: { error in
                print("VERIFY:", error)
                guard let e = error as? MoqError, case .tls = e else { return false }
                return true
            }
        }
    }

    @Test("a path outside the grant is refused at the CONNECT (401 without a token, 403 with one)")
    func refusedAtConnect() async throws {
        try await scoped(
            try RelayTests.relay(auth: RelayAuth(publicPrefixes: ["anon"], key: OwnershipTests.key)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            for token in [nil, OwnershipTests.token(root: "other", put: [""])] {
                await #expect {
                    _ = try await Self.connect(relay, "https", "secret", token: token)
                } throws: { error in
                    print("REFUSED:", error)
                    guard let e = error as? MoqError, case .refused(let code, let reason) = e else { return false }
                    return code == SessionErrorCode.unauthorized.rawValue
                        && reason.contains(token == nil ? "HTTP 401" : "HTTP 403")
                }
            }
            // The grant's own root works.
            let allowed = try await Self.connect(
                relay, "https", "secret", token: OwnershipTests.token(root: "secret", put: [""]))
            allowed.close()
        }
    }
}

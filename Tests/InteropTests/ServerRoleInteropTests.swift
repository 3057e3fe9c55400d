// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// The Swift server role with moq-dev's Rust client.
@Suite("Interop: Swift server, Rust client", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct ServerRoleInteropTests {
    @Test("a Rust client completes SETUP with the Swift server, which sees its path")
    func rustClientSetup() async throws {
        let paths = Lock<[String?]>([])
        let server = try MoqServer.listen { _, setup in paths.withLock { $0.append(setup.path) } }
        defer { server.close() }
        let client = try RustPeer.launch(
            [
                "connect", "--url", "moql://127.0.0.1:\(server.port)/anon/room?jwt=abc", "--fingerprint",
                server.fingerprint,
            ])
        defer { client.terminateInBackground() }
        let connected = try await client.waitFor(event: "connected", timeout: .seconds(20))
        #expect(connected.string("version") == "moq-lite-06")
        #expect(try await client.waitForExit(timeout: .seconds(10)) == 0)
        #expect(paths.withLock { $0 } == ["/anon/room?jwt=abc"])
    }

    @Test("a Rust client with a wrong pin is refused by its own check")
    func rustClientWrongPin() async throws {
        let server = try MoqServer.listen()
        defer { server.close() }
        let wrong = String(repeating: "ab", count: 32)
        let client = try RustPeer.launch([
            "connect", "--url", "moql://127.0.0.1:\(server.port)/", "--fingerprint", wrong,
        ])
        defer { client.terminateInBackground() }
        let error = try await client.waitFor(event: "error", timeout: .seconds(20))
        #expect(error.string("message") != nil)
        #expect(try await client.waitForExit(timeout: .seconds(10)) != 0)
    }

    @Test("a Rust subscriber reads a track straight from the Swift server")
    func rustSubscribesFromSwiftServer() async throws {
        let server = try MoqServer.listen()
        defer { server.close() }
        let name = RustPeer.uniqueName("direct")
        let broadcast = BroadcastProducer(path: name)
        let track = broadcast.createTrack("data", info: TrackInfo(maxAgeMs: 10_000))
        server.origin.publish(broadcast)
        let subscriber = try RustPeer.launch(
            [
                "subscribe", "--url", "moql://127.0.0.1:\(server.port)/", "--fingerprint", server.fingerprint,
                "--broadcast", name, "--track", "data", "--order", "arrival",
            ])
        defer { subscriber.terminateInBackground() }
        try await eventually("the Rust subscriber") { track.observerCount > 0 }
        for g in 0..<5 {
            let group = track.appendGroup()
            group.write(Bytes(utf8: "direct \(g)"), timestamp: UInt64(g) * 10_000)
            group.finish()
            try await Task.sleep(for: .milliseconds(5))
        }
        track.finish()
        let frames = try await subscriber.collect(until: "end", timeout: .seconds(20)).filter { $0.name == "frame" }
        #expect(framesByGroup(frames) == wholeGroups(0..<5, frames: 1), "arrived: \(arrivalOrder(frames))")
        #expect(frames.allSatisfy { $0.bytes("payload") == Array("direct \($0.int("group") ?? -1)".utf8) })
    }

    @Test("the Swift server subscribes to what a Rust client publishes")
    func swiftServerSubscribesToRustClient() async throws {
        let sessions = Lock<[MoqSession]>([])
        let server = try MoqServer.listen { session, _ in sessions.withLock { $0.append(session) } }
        defer { server.close() }
        let name = RustPeer.uniqueName("upload")
        let publisher = try RustPeer.launch(
            [
                "publish", "--url", "moql://127.0.0.1:\(server.port)/", "--fingerprint", server.fingerprint,
                "--broadcast", name, "--groups", "4", "--frames-per-group", "2", "--payload-size", "64",
                "--wait-subscriber", "--linger-ms", "3000",
            ])
        defer { publisher.terminateInBackground() }
        try await eventually("the Rust client's session") { !sessions.withLock { $0 }.isEmpty }
        let session = sessions.withLock { $0[0] }
        try await session.waitForBroadcast(name)
        let remote = session.subscribe(broadcast: name, track: "data", range: SubscriptionRange(maxLatencyMs: 10_000))
        let received = try await readAll(remote.consumer())
        let order: [[Int]] = received.map { [Int($0.0), $0.1] }
        #expect(order == (0..<4).flatMap { g in (0..<2).map { [g, $0] } })
        #expect(received.allSatisfy { $0.3 == rustPayload(group: Int($0.0), frame: $0.1, size: 64) })
    }
}

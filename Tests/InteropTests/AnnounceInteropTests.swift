// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import SwiftMoQ
import Testing

@Suite("Interop: discovery by prefix", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct AnnounceInteropTests {
    @Test("Swift sees a Rust publisher's announce and unannounce under a prefix")
    func swiftSeesRustAnnouncements() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let prefix = RustPeer.uniqueName("room")
        let session = try await relay.connect()
        defer { session.close() }
        var events = session.announced(prefix: prefix).makeAsyncIterator()
        let publisher = try RustPeer.launch(
            // Lingers: our ANNOUNCE_REQUEST may reach the relay after the publisher's announce (under
            // load), and must still find the broadcast there.
            ["publish"] + relay.client + ["--broadcast", "\(prefix)/alice", "--groups", "1", "--linger-ms", "3000"])
        defer { publisher.terminateInBackground() }
        let first = await events.next()
        guard case .active(let path, let route)? = first else {
            Issue.record("expected an announce, got \(String(describing: first))")
            return
        }
        #expect(path == "\(prefix)/alice")
        #expect(route.hops.count == 2)  // the publisher's hop and the relay's
        let second = await events.next()
        #expect(second == .ended(path: "\(prefix)/alice"))
    }

    @Test("prefixes match whole segments on the Rust side too")
    func wholeSegmentPrefix() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let base = RustPeer.uniqueName("seg")
        let publisher = try await relay.connect()
        defer { publisher.close() }
        publisher.publish(BroadcastProducer(path: "\(base)room/x"))
        publisher.publish(BroadcastProducer(path: "\(base)/room/y"))
        let watcher = try RustPeer.launch(["announced"] + relay.client + ["--prefix", "\(base)/room", "--count", "1"])
        defer { watcher.terminateInBackground() }
        let event = try await watcher.waitFor(event: "announce", timeout: .seconds(20))
        #expect(event.string("path") == "\(base)/room/y")
    }

    @Test("Rust sees a Swift publisher's announce and unannounce")
    func rustSeesSwiftAnnouncements() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let prefix = RustPeer.uniqueName("room")
        let watcher = try RustPeer.launch(["announced"] + relay.client + ["--prefix", prefix, "--count", "2"])
        defer { watcher.terminateInBackground() }
        try await watcher.waitFor(event: "watching", timeout: .seconds(20))
        let session = try await relay.connect()
        defer { session.close() }
        let broadcast = BroadcastProducer(path: "\(prefix)/bob")
        session.publish(broadcast)
        let announce = try await watcher.waitFor(event: "announce", timeout: .seconds(20))
        #expect(announce.string("path") == "\(prefix)/bob")
        #expect(announce.bool("active") == true)
        broadcast.close()
        let unannounce = try await watcher.waitFor(event: "announce", timeout: .seconds(20))
        #expect(unannounce.string("path") == "\(prefix)/bob")
        #expect(unannounce.bool("active") == false)
    }

    @Test("a publisher that disconnects is unannounced")
    func disconnectUnannounces() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("gone")
        let watcher = try await relay.connect()
        defer { watcher.close() }
        var events = watcher.announced(prefix: name).makeAsyncIterator()
        let publisher = try await relay.connect()
        publisher.publish(BroadcastProducer(path: name))
        guard case .active(let path, _)? = await events.next() else {
            Issue.record("expected an announce")
            return
        }
        #expect(path == name)
        publisher.close()
        let next = await events.next()
        #expect(next == .ended(path: name))
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqSync
import Testing

@testable import MoqInteropSupport

/// Proves the `RustPeer` helper with the Rust tool on both ends, so that a failing interop
/// test can be blamed on SwiftMoQ and not on the harness.
@Suite("RustPeer helper (Rust on both ends)", .timeLimit(.minutes(1)), .peersStopped)
struct RustPeerSelfTests {
    /// The payload `moqpeer publish --payload-size` writes: `g{group}f{frame}` repeated and cut.
    static func payload(group: Int, frame: Int, size: Int) -> [UInt8] {
        let tag = Array("g\(group)f\(frame)".utf8)
        return Array((0..<size).map { tag[$0 % tag.count] })
    }

    @Test("a peer left running by a test in a .peersStopped scope has exited when the scope returns")
    func peersStoppedScope() async throws {
        let launched = Lock<RustPeer?>(nil)
        // The scope the trait gives each test, entered once more by hand: nested, it would defer to
        // this test's own scope, so it runs in a task without one.
        let test = try #require(Test.current)
        let testCase = try #require(Test.Case.current)
        try await PeerScope.$current.withValue(nil) {
            try await PeersStopped().provideScope(for: test, testCase: testCase) {
                let relay = try await RustPeer.relay()
                launched.withLock { $0 = relay.peer }
                #expect(relay.peer.exitStatus == nil)
            }
        }
        let peer = try #require(launched.withLock { $0 })
        #expect(peer.exitStatus != nil, "the relay was stopped and reaped before the scope returned")
    }

    @Test("frames published through the Rust relay arrive intact and in order")
    func publishSubscribeThroughRelay() async throws {
        let (relay, port, fingerprint) = try await RustPeer.relay()
        defer { relay.terminate() }
        let client = RustPeer.clientArguments(port: port, fingerprint: fingerprint)
        let name = RustPeer.uniqueName("peer-selftest")
        let (groups, framesPerGroup, size) = (6, 4, 300)

        // In arrival order: see framesByGroup.
        let subscriber = try RustPeer.launch(
            ["subscribe"] + client + ["--broadcast", name, "--track", "data", "--order", "arrival"])
        let publisher = try RustPeer.launch(
            ["publish"] + client + [
                "--broadcast", name, "--track", "data", "--groups", "\(groups)",
                "--frames-per-group", "\(framesPerGroup)", "--payload-size", "\(size)",
                "--interval-ms", "5", "--wait-subscriber", "--linger-ms", "500",
            ])

        let events = try await subscriber.collect(until: "end", timeout: .seconds(30))
        let frames = events.filter { $0.name == "frame" }
        #expect(
            framesByGroup(frames) == wholeGroups(0..<groups, frames: framesPerGroup), "arrived: \(arrivalOrder(frames))"
        )
        for frame in frames {
            let (group, index) = (frame.int("group") ?? -1, frame.int("index") ?? -1)
            #expect(frame.bytes("payload") == Self.payload(group: group, frame: index, size: size), "\(frame)")
            #expect(frame.int("size") == size)
            #expect(frame.int("timestamp_us") == (group * framesPerGroup + index) * 33333)
        }
        #expect(try await subscriber.waitForExit(timeout: .seconds(10)) == 0)

        let published = try await publisher.collect(until: "done", timeout: .seconds(10))
        #expect(published.filter { $0.name == "group" }.compactMap { $0.int("group") } == Array(0..<groups))
        #expect(try await publisher.waitForExit(timeout: .seconds(10)) == 0)
    }

    @Test("announced sees the announce and the unannounce")
    func announcedSeesAnnounceAndUnannounce() async throws {
        let (relay, port, fingerprint) = try await RustPeer.relay()
        defer { relay.terminate() }
        let client = RustPeer.clientArguments(port: port, fingerprint: fingerprint)
        let prefix = RustPeer.uniqueName("announce-selftest")
        let name = "\(prefix)/cam"

        let watcher = try RustPeer.launch(["announced"] + client + ["--prefix", prefix, "--count", "2"])
        try await watcher.waitFor(event: "watching", timeout: .seconds(20))
        let publisher = try RustPeer.launch(
            ["publish"] + client + ["--broadcast", name, "--groups", "1", "--linger-ms", "500"])

        // A broadcast announced and gone within a few ms may reach the watcher as nothing at
        // all (the relay coalesces): the publisher lingers so the announce is observable.
        let announced = try await watcher.waitFor(event: "announce", timeout: .seconds(20))
        #expect(announced.string("path") == name)
        #expect(announced.bool("active") == true)
        // The publisher finishes and closes its session; the relay retracts the broadcast.
        #expect(try await publisher.waitForExit(timeout: .seconds(20)) == 0)
        let retracted = try await watcher.waitFor(event: "announce", timeout: .seconds(20))
        #expect(retracted.string("path") == name)
        #expect(retracted.bool("active") == false)
        #expect(try await watcher.waitForExit(timeout: .seconds(10)) == 0)
    }

    @Test("a failing peer surfaces its error message")
    func wrongPinFails() async throws {
        let (relay, port, fingerprint) = try await RustPeer.relay()
        defer { relay.terminate() }
        let wrong = String(fingerprint.reversed())
        let peer = try RustPeer.launch(["connect"] + RustPeer.clientArguments(port: port, fingerprint: wrong))
        let error = await #expect(throws: RustPeerError.self) {
            try await peer.waitFor(event: "connected", timeout: .seconds(20))
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("fingerprint mismatch"))
        #expect(try await peer.waitForExit(timeout: .seconds(10)) == 1)
    }

    @Test("the blocking API works from a plain thread, and terminate stops a relay cleanly")
    func blockingAPIAndTerminate() throws {
        let (relay, port, fingerprint) = try RustPeer.relay()
        let connect = try RustPeer.launch(["connect"] + RustPeer.clientArguments(port: port, fingerprint: fingerprint))
        let connected = try connect.waitFor(event: "connected", timeout: .seconds(20))
        #expect(connected.string("version") == "moq-lite-06")
        #expect(try connect.waitForExit(timeout: .seconds(10)) == 0)
        let session = try relay.waitFor(event: "session", timeout: .seconds(10))
        #expect(session.string("path") == "/anon")
        #expect(relay.terminate() == 0)
        #expect(relay.history.last?.name == "stopped")
    }

    @Test("a missing virtualenv is reported with the set-up command")
    func missingVirtualenv() throws {
        let error = #expect(throws: RustPeerError.self) {
            try RustPeer.launch(["relay"], python: "/nonexistent/.venv/bin/python")
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("make setup"))
    }
}

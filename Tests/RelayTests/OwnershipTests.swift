// SPDX-License-Identifier: MIT
import Foundation
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// Who may hold a broadcast path on the relay, for how long, and which paths are the same.
@Suite("Swift relay: tokens, ownership, paths", .serialized, .timeLimit(.minutes(2)))
struct OwnershipTests {
    static let key = Array("a secret of at least thirty-two bytes!!".utf8)

    static func relay() throws -> MoqRelay {
        try MoqRelay.start(
            MoqRelay.Configuration(
                host: "127.0.0.1", port: 0, auth: RelayAuth(publicPrefixes: ["anon"], key: key), logger: .silent))
    }

    static func connect(_ relay: MoqRelay, _ path: String, token: String? = nil) async throws -> MoqSession {
        try await relay.connectClient(path: path) { $0.authToken = token }
    }

    static func token(root: String, put: [String], get: [String] = [""], expires: Date? = nil, notBefore: Date? = nil)
        -> String
    {
        JWT.signHS256(
            JWT.Claims(root: root, publish: put, subscribe: get, expires: expires, notBefore: notBefore), key: key)
    }

    @Test("a session is closed when its token's exp passes")
    func expiryClosesTheSession() async throws {
        try await withRelay(try Self.relay()) { (relay) async throws in
            let session = try await Self.connect(
                relay, "room", token: Self.token(root: "room", put: [""], expires: Date().addingTimeInterval(2)))
            let reason = try await withTimeout("the session to close", .seconds(15)) { try await session.closed() }
            #expect(reason == .remote(.unauthorized, "the token expired"))
        }
    }

    @Test("a token is refused before its nbf")
    func notBefore() async throws {
        try await withRelay(try Self.relay()) { (relay) async throws in
            await #expect {
                _ = try await Self.connect(
                    relay, "room",
                    token: Self.token(root: "room", put: [""], notBefore: Date().addingTimeInterval(3600)))
            } throws: { error in
                guard case .refused(let code, let reason) = error as? MoqError else { return false }
                return code == SessionErrorCode.unauthorized.rawValue && reason.contains("not valid yet")
            }
        }
    }

    @Test("a path held by one session is not taken over by another; the same grant may replace its own")
    func ownership() async throws {
        try await withRelay(try Self.relay()) { (relay) async throws in
            let alice = Self.token(root: "room", put: ["alice"])
            let owner = try await Self.connect(relay, "room", token: alice)
            owner.publish(BroadcastProducer(path: "alice/cam"))
            let watcher = try await Self.connect(relay, "room", token: Self.token(root: "room", put: []))
            try await watcher.waitForBroadcast("alice/cam")
            // Another grant that may publish there too: refused, its session closed with a clear code.
            let intruder = try await Self.connect(relay, "room", token: Self.token(root: "room", put: [""]))
            intruder.publish(BroadcastProducer(path: "alice/cam"))
            let reason = try await withTimeout("the intruder to be closed", .seconds(15)) {
                try await intruder.closed()
            }
            #expect(reason == .remote(.unauthorized, "broadcast 'room/alice/cam' is published by another session"))
            #expect(relay.origin.broadcast("room/alice/cam") != nil)
            // The owner reconnecting (same grant, the old session still open) replaces its own broadcast.
            // Watched from before it reconnects (the stream registers when asked for, not when a task
            // first reads it), and waited for with a deadline: a missed announcement fails, never hangs.
            let announcements = watcher.announced(prefix: "alice")
            let actives = Lock(0)
            let reader = Task {
                for await event in announcements { if case .active = event { actives.withLock { $0 += 1 } } }
            }
            defer { reader.cancel() }
            let again = try await Self.connect(relay, "room", token: alice)
            again.publish(BroadcastProducer(path: "alice/cam"))
            // The watcher hears the path again (a new route): the replacement happened while the
            // old session still held it.
            try await eventually("the path announced again") { actives.withLock { $0 } >= 2 }
            try await eventually("the intruder gone", detail: { "\(relay.sessionCount) sessions" }) {
                relay.sessionCount == 3
            }
            owner.close()
            try await eventually("the old owner gone", detail: { "\(relay.sessionCount) sessions" }) {
                relay.sessionCount == 2
            }
            // The path outlived the old session: the new one holds it.
            #expect(relay.origin.broadcast("room/alice/cam") != nil)
            #expect(again.closeReason == nil)
            watcher.close()
            again.close()
        }
    }

    @Test("paths compare byte by byte: composed and decomposed é are two broadcasts, as for the Rust peers")
    func bytewisePaths() async throws {
        // A named function, not a closure: Swift 6.3.1's SendNonSendable pass crashes on this body as a closure.
        try await withRelay(try Self.relay(), Self.checkBytewisePaths)
    }

    static func checkBytewisePaths(_ relay: MoqRelay) async throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)  // Swift's own equality: canonical
        #expect(BroadcastPath.strip(prefix: composed, from: "\(decomposed)/x") == nil)
        let a = try await Self.connect(relay, "anon")
        let b = try await Self.connect(relay, "anon")
        a.publish(BroadcastProducer(path: composed))
        b.publish(BroadcastProducer(path: decomposed))
        _ = try await eventually("both paths at the relay", { relay.origin.paths }, until: { $0.count == 2 })
        #expect(a.closeReason == nil && b.closeReason == nil)
        a.close()
        b.close()
    }

}

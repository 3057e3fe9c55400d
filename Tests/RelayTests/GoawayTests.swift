// SPDX-License-Identifier: MIT
import Foundation
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// GOAWAY is followed make-before-break: the successor session is open before the old closes.
@Suite("GOAWAY and reconnect backoff", .serialized, .timeLimit(.minutes(2)))
struct GoawayTests {
    final class Log: Sendable {
        let sessions = Lock<[MoqSession]>([])
        let statuses = Lock<[ReconnectingSession.Status]>([])
        let goaways = Lock<[String]>([])
        let starts = Lock<[ReconnectingSession.SessionStart]>([])
        /// Whether the previous session was still open when each session came up.
        let previousOpen = Lock<[Bool]>([])
    }

    @Test("a client moves to a new session on GOAWAY, opened before the old one closes, without reconnecting")
    func handover() async throws {
        try await scoped(
            try MoqRelay.start(
                MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            let log = Log()
            var handlers = ReconnectingSession.Handlers()
            handlers.session = { s, start in
                log.starts.withLock { $0.append(start) }
                let previous = log.sessions.withLock { sessions in
                    defer { sessions.append(s) }
                    return sessions.last
                }
                log.previousOpen.withLock { $0.append(previous.map { $0.closeReason == nil } ?? false) }
            }
            handlers.status = { s in log.statuses.withLock { $0.append(s) } }
            handlers.goaway = { uri in log.goaways.withLock { $0.append(uri) } }
            let client = ReconnectingSession(
                url: try MoqURL("moql://127.0.0.1:\(relay.port)/anon"),
                options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)), handlers: handlers)
            client.start()
            defer { client.stop() }
            try await eventually("the first session at the relay") { log.sessions.withLock { $0.count } == 1 }
            let first = log.sessions.withLock { $0[0] }
            // Something published on the first session is seen by a watcher throughout.
            let broadcast = BroadcastProducer(path: "live")
            first.publish(broadcast)
            relay.goaway()
            try await eventually("the successor session at the relay") { log.sessions.withLock { $0.count } == 2 }
            let second = log.sessions.withLock { $0[1] }
            #expect(second !== first)
            #expect(second.closeReason == nil)
            _ = try await withTimeout("the first session to close", .seconds(15)) { try await first.closed() }
            #expect(log.goaways.withLock { $0 } == [""])
            #expect(log.starts.withLock { $0 } == [.first, .handover])
            #expect(log.previousOpen.withLock { $0 } == [false, true], "make before break")
            #expect(client.handovers == 1)
            #expect(client.reconnects == 0)
            #expect(!log.statuses.withLock { $0 }.contains(.reconnecting))
            #expect(client.status == .connected)
            #expect(client.session === second)
        }
    }

    @Test("reconnect backoff is jittered: each wait is between half and all of its step")
    func jitter() {
        for step in ReconnectingSession.backoff {
            let waits = (0..<200).map { _ in ReconnectingSession.jittered(step) }
            #expect(waits.allSatisfy { $0 >= step / 2 && $0 <= step })
            #expect(Set(waits.map { $0.components.attoseconds }).count > 100)
        }
    }

}

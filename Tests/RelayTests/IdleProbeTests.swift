// SPDX-License-Identifier: MIT
import MoqSync
import MoqTestKit
import SwiftMoQ
import Synchronization
import Testing

/// An idle client with a probe stream open times out as idle: the relay's probe reports do not feed
/// on the traffic they cause (ElementStatusTests saw a quiet moqsrc's session held open for 60 s).
@Suite("Swift relay: probe reports on an idle session", .timeLimit(.minutes(1)))
struct IdleProbeTests {
    @Test("a probe stream opened late on an idle session: a few reports, then the session idles out")
    func idleSessionWithProbe() async throws {
        var configuration = MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)
        configuration.keepAliveInterval = .zero
        try await withRelay(try MoqRelay.start(configuration)) { (relay) async throws in
            for _ in 0..<3 {
                let session = try await relay.connectClient { options in
                    options.idleTimeout = .seconds(1)
                    options.keepAliveInterval = .zero
                }
                // The sleep is part of the setup under test: a probe stream that reaches the relay
                // more than one rate window (100 ms) after the handshake started the report chain.
                try await Task.sleep(for: .milliseconds(150))
                let reports = Atomic<Int>(0)
                let reader = Task { for await _ in session.probes() { reports.add(1, ordering: .relaxed) } }
                defer { reader.cancel() }
                _ = try await withTimeout("the idle session to close", .seconds(8)) { try await session.closed() }
                #expect(
                    reports.load(ordering: .relaxed) < 10, "reports on an idle session (a chain sends ten a second)")
            }
        }
    }
}

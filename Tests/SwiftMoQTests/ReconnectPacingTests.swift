// SPDX-License-Identifier: MIT
import Testing

@testable import SwiftMoQ

@Suite("ReconnectingSession pacing")
struct ReconnectPacingTests {
    @Test("attempts start at 2 s and double after each timeout, up to the connect timeout")
    func attemptTimeouts() {
        let cap = Duration.seconds(10)
        let limits = (0..<6).map { ReconnectingSession.attemptTimeout(afterTimeouts: $0, cap: cap) }
        #expect(limits == [.seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10), .seconds(10)])
        // A shorter connect timeout caps the first attempt too; huge streaks neither trap nor grow.
        #expect(ReconnectingSession.attemptTimeout(afterTimeouts: 0, cap: .seconds(1)) == .seconds(1))
        #expect(ReconnectingSession.attemptTimeout(afterTimeouts: Int.max, cap: .seconds(30)) == .seconds(30))
    }

    @Test("backoff waits are drawn from the upper half of each delay")
    func jitter() {
        for delay in ReconnectingSession.backoff {
            for _ in 0..<100 {
                let wait = ReconnectingSession.jittered(delay)
                #expect(wait >= delay / 2 && wait <= delay)
            }
        }
    }
}

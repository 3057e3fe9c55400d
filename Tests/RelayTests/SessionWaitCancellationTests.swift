// SPDX-License-Identifier: MIT
import MoqTestKit
import SwiftMoQ
import Testing

/// A session's waits end when their task is cancelled (#26: an await on an open session held tests forever).
@Suite("MoqSession waits honour cancellation", .timeLimit(.minutes(1)))
struct SessionWaitCancellationTests {
    @Test(
        "closed() and lifecycleEvent() on an open session throw CancellationError when cancelled; closed() returns once closed"
    )
    func cancelledWaits() async throws {
        try await withTestRelay { relay in
            let session = try await relay.connect()
            let closing = Task { try await session.closed() }
            let lifecycle = Task { try await session.lifecycleEvent() }
            // Cancelled before and after they registered: both kinds end.
            let early = Task { try await session.closed() }
            early.cancel()
            closing.cancel()
            lifecycle.cancel()
            for task in [closing, early] {
                await #expect(throws: CancellationError.self) { try await task.value }
            }
            await #expect(throws: CancellationError.self) { try await lifecycle.value }
            #expect(session.closeReason == nil)
            #expect(try await session.stats().binding == .quic)  // stats() still answers after the cancellations
            session.close()
            let reason = try await withTimeout("the close", .seconds(10)) { try await session.closed() }
            #expect(reason == .local(.cancel, ""))
        }
    }

    @Test("eventually's failure names what it waited for, how long, and the last value it saw")
    func eventuallyFailure() async throws {
        var seen = 0
        do {
            _ = try await eventually("three sessions", timeout: .milliseconds(50)) {
                seen += 1
                return 2
            } until: {
                $0 == 3
            }
            Issue.record("eventually returned")
        } catch let error as TestKitError {
            #expect("\(error)" == "timed out waiting for three sessions (0.05 seconds; last seen: 2)", "\(error)")
        }
        #expect(seen > 1)
        await #expect(throws: TestKitError.self) {
            try await withTimeout("a session that never closes", .milliseconds(50)) {
                try await Task.sleep(for: .seconds(60))
            }
        }
    }
}

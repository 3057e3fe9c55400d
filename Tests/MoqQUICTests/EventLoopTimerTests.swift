// SPDX-License-Identifier: MIT
import MoqSync
import Testing

@testable import MoqQUIC

/// The loop's single timer is moved only to earlier deadlines (reprogramming it is a costly system
/// call); a deadline that moves later is reached through an early, idle firing. Both ways must still
/// run every timer at its time, never before.
@Suite(.serialized)
struct EventLoopTimerTests {
    /// Schedules `work` on `loop` after `delay`, recording when it ran (loop clock, ns).
    private func fire(
        _ loop: QUICEventLoop, after delay: Duration, into log: Lock<[String: UInt64]>, _ name: String,
        _ done: Condition
    ) -> QUICTimer {
        loop.schedule(after: delay) {
            log.withLock { $0[name] = Sys.now() }
            done.signal()
        }
    }

    @Test("a timer due before the armed one fires at its own time")
    func earlierDeadlineReArms() async throws {
        let loop = try QUICEventLoop(name: "timer-earlier")
        defer { loop.shutdown() }
        let log = Lock<[String: UInt64]>([:])
        let done = Condition()
        let start = Sys.now()
        let late = fire(loop, after: .seconds(30), into: log, "late", done)
        _ = fire(loop, after: .milliseconds(40), into: log, "soon", done)
        #expect(await done.wait(.seconds(10)) { log.withLock { $0["soon"] != nil } })
        let soon = log.withLock { $0["soon"] } ?? 0
        #expect(soon >= start + 40_000_000)
        #expect(log.withLock { $0["late"] } == nil)
        late.cancel()
    }

    @Test("after the armed timer is cancelled, a later one fires at its time, not at the cancelled one's")
    func laterDeadlineWaitsForItsTime() async throws {
        let loop = try QUICEventLoop(name: "timer-later")
        defer { loop.shutdown() }
        let log = Lock<[String: UInt64]>([:])
        let done = Condition()
        let start = Sys.now()
        let first = fire(loop, after: .milliseconds(20), into: log, "cancelled", done)
        first.cancel()
        _ = fire(loop, after: .milliseconds(150), into: log, "later", done)
        // Ten timers at once, in reverse order: each runs, none early.
        for i in 0..<10 {
            _ = fire(loop, after: .milliseconds(Int64(100 - i * 5)), into: log, "t\(i)", done)
        }
        #expect(await done.wait(.seconds(10)) { log.withLock { $0["later"] != nil && $0.count == 11 } })
        let fired = log.withLock { $0 }
        #expect(fired["cancelled"] == nil)
        #expect((fired["later"] ?? 0) >= start + 150_000_000)
        for i in 0..<10 {
            #expect((fired["t\(i)"] ?? 0) >= start + UInt64(100 - i * 5) * 1_000_000, "t\(i)")
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import Synchronization

/// A session thread on virtual time, driven by the fuzz script.
final class FuzzScheduler: SessionScheduler, @unchecked Sendable {
    private struct Timer {
        let due: UInt64
        let order: UInt64
        let work: @Sendable () -> Void
        let handle: Handle
    }

    final class Handle: Cancellable, @unchecked Sendable {
        let cancelled = Atomic(false)
        func cancel() { cancelled.store(true, ordering: .relaxed) }
    }

    private var queue: [@Sendable () -> Void] = []
    private var timers: [Timer] = []
    private var counter: UInt64 = 0
    let virtualClock = VirtualClock()
    var clock: any MoqClock { virtualClock }
    /// Work items run since ``resetSteps()`` (a runaway loop within one script step is a finding).
    private(set) var steps = 0
    static let maxSteps = 200_000

    func resetSteps() { steps = 0 }

    func execute(_ work: @escaping @Sendable () -> Void) { queue.append(work) }

    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any Cancellable {
        let handle = Handle()
        counter += 1
        push(Timer(due: virtualClock.now() &+ delay.nanoseconds, order: counter, work: work, handle: handle))
        return handle
    }

    /// Runs queued work until none is left; false if it never stops.
    func run() -> Bool {
        while !queue.isEmpty {
            let batch = queue
            queue = []
            for work in batch { work() }
            steps += batch.count
            if steps > Self.maxSteps { return false }
        }
        return true
    }

    /// Moves time forward, firing due timers in order; false on runaway work.
    func advance(by nanoseconds: UInt64) -> Bool {
        let target = virtualClock.now() &+ nanoseconds
        guard run() else { return false }
        while let next = timers.first, next.due <= target {
            popFirst()
            if next.handle.cancelled.load(ordering: .relaxed) { continue }
            if next.due > virtualClock.now() { virtualClock.advance(by: next.due - virtualClock.now()) }
            next.work()
            guard run() else { return false }
        }
        if target > virtualClock.now() { virtualClock.advance(by: target - virtualClock.now()) }
        return true
    }

    // MARK: Timer heap (by due time, then order of scheduling)

    private static func before(_ a: Timer, _ b: Timer) -> Bool { (a.due, a.order) < (b.due, b.order) }

    private func push(_ timer: Timer) {
        timers.append(timer)
        var i = timers.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(timers[i], timers[parent]) else { break }
            timers.swapAt(i, parent)
            i = parent
        }
    }

    private func popFirst() {
        timers.swapAt(0, timers.count - 1)
        timers.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var smallest = i
            if l < timers.count && Self.before(timers[l], timers[smallest]) { smallest = l }
            if r < timers.count && Self.before(timers[r], timers[smallest]) { smallest = r }
            guard smallest != i else { return }
            timers.swapAt(i, smallest)
            i = smallest
        }
    }
}

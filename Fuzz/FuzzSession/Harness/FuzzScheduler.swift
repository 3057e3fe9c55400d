// SPDX-License-Identifier: MIT
import Synchronization

#if canImport(MoqSession)
    import MoqSession
#endif

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
        timers.append(Timer(due: virtualClock.now() &+ delay.nanoseconds, order: counter, work: work, handle: handle))
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
        while true {
            timers.removeAll { $0.handle.cancelled.load(ordering: .relaxed) }
            guard
                let i = timers.indices.filter({ timers[$0].due <= target }).min(by: {
                    (timers[$0].due, timers[$0].order) < (timers[$1].due, timers[$1].order)
                })
            else { break }
            let next = timers.remove(at: i)
            if next.due > virtualClock.now() { virtualClock.advance(by: next.due - virtualClock.now()) }
            next.work()
            guard run() else { return false }
        }
        if target > virtualClock.now() { virtualClock.advance(by: target - virtualClock.now()) }
        return true
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import MoqSync
import Synchronization

/// A session thread on virtual time: work runs only when the test drains it.
final class VirtualScheduler: SessionScheduler, @unchecked Sendable {
    private struct Timer {
        let due: UInt64
        let order: UInt64
        let work: @Sendable () -> Void
        let handle: TimerHandle
    }

    final class TimerHandle: Cancellable, @unchecked Sendable {
        let cancelled = Atomic(false)
        func cancel() { cancelled.store(true, ordering: .relaxed) }
    }

    private let queue = Lock<[@Sendable () -> Void]>([])
    private let timers = Lock<[Timer]>([])
    private let counter = Atomic<UInt64>(0)
    let virtualClock = VirtualClock()
    var clock: any MoqClock { virtualClock }

    func execute(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(work) }
    }

    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any Cancellable {
        let handle = TimerHandle()
        let timer = Timer(
            due: virtualClock.now() + delay.nanoseconds, order: counter.add(1, ordering: .relaxed).newValue,
            work: work, handle: handle)
        timers.withLock { $0.append(timer) }
        return handle
    }

    /// Runs queued work until none is left. Returns the number of items run.
    @discardableResult
    func run(limit: Int = 10_000_000) -> Int {
        var ran = 0
        while true {
            let batch = queue.withLock { q -> [@Sendable () -> Void] in
                defer { q = [] }
                return q
            }
            if batch.isEmpty { return ran }
            for work in batch { work() }
            ran += batch.count
            precondition(ran < limit, "virtual scheduler: runaway work")
        }
    }

    /// Runs the oldest queued item; false when nothing is queued.
    @discardableResult
    func step() -> Bool {
        let next = queue.withLock { q -> (@Sendable () -> Void)? in q.isEmpty ? nil : q.removeFirst() }
        guard let next else { return false }
        next()
        return true
    }

    /// Moves time forward by `duration`, firing due timers in order and draining work after each.
    func advance(by duration: Duration) {
        let target = virtualClock.now() + duration.nanoseconds
        run()
        while true {
            let next = timers.withLock { t -> Timer? in
                guard
                    let i = t.indices.filter({ t[$0].due <= target }).min(by: {
                        (t[$0].due, t[$0].order) < (t[$1].due, t[$1].order)
                    })
                else { return nil }
                return t.remove(at: i)
            }
            guard let next else { break }
            if next.due > virtualClock.now() { virtualClock.advance(by: next.due - virtualClock.now()) }
            if !next.handle.cancelled.load(ordering: .relaxed) { next.work() }
            run()
        }
        if target > virtualClock.now() { virtualClock.advance(by: target - virtualClock.now()) }
    }

    /// Timers scheduled and neither fired nor cancelled.
    var pendingTimers: Int {
        timers.withLock { $0.filter { !$0.handle.cancelled.load(ordering: .relaxed) }.count }
    }
}

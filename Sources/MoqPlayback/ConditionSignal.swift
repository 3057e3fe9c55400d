// SPDX-License-Identifier: MIT
import Glibc

/// A wake-up a plain thread can block on (a GStreamer pad task, not a Swift task):
/// a generation counter under a pthread mutex with a condition variable on the
/// monotonic clock. Waiters compare the generation they read before checking for work,
/// so a signal between the check and the wait is never lost.
///
/// `@unchecked Sendable`: the pthread objects live at stable heap addresses for the
/// object's lifetime and are only touched while the mutex is held.
public final class ConditionSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var generation: UInt64 = 0

    /// Creates a signal.
    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// The current generation: read it before looking for work, then ``wait(since:timeoutNs:)``.
    public var current: UInt64 {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return generation
    }

    /// Wakes every waiter.
    public func signal() {
        pthread_mutex_lock(mutex)
        generation &+= 1
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until the generation moves past `since` or `timeoutNs` passes.
    /// - Returns: true when signalled, false on timeout.
    @discardableResult
    public func wait(since: UInt64, timeoutNs: UInt64) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let total = UInt64(deadline.tv_nsec) + timeoutNs % 1_000_000_000
        deadline.tv_sec += Int(timeoutNs / 1_000_000_000) + Int(total / 1_000_000_000)
        deadline.tv_nsec = Int(total % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while generation == since {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return generation != since }
        }
        return true
    }
}

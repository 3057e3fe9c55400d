// SPDX-License-Identifier: MIT
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a mutual-exclusion lock: the project's one lock type.
///
/// The same shape as `Synchronization.Mutex` (`withLock` hands the value out `inout` for the
/// duration of a closure), built on `pthread_mutex_t`. On Linux `Mutex` waits on a futex
/// inside the uninstrumented runtime, so ThreadSanitizer cannot see its happens-before edges
/// and reports every access it guards as a race (measured: `make tsan` reported 135 such
/// races, none real); ThreadSanitizer intercepts pthread mutexes, so with this type its
/// reports are about real races. Uncontended, a pthread mutex costs the same atomic
/// compare-and-swap as `Mutex`.
///
/// A class rather than a `~Copyable` struct: a pthread mutex must not move, and every lock in
/// the project lives in a reference type anyway.
public final class Lock<Value: ~Copyable>: @unchecked Sendable {  // `value` only under `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock around `value`.
    public init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Not reentrant: `body` must not take
    /// this lock again.
    @inline(__always)
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

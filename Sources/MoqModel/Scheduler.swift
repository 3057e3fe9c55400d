// SPDX-License-Identifier: MIT

/// A handle to cancel scheduled work.
public protocol Cancellable: Sendable {
    /// Prevents the work from running if it has not run yet.
    func cancel()
}

/// The single thread a session runs on (the QUIC event loop, or a test's virtual loop).
///
/// Every session-core call happens on it; other threads hand it work with ``execute(_:)``.
public protocol SessionScheduler: Sendable {
    /// Runs `work` on the session thread, in FIFO order.
    func execute(_ work: @escaping @Sendable () -> Void)
    /// Runs `work` on the session thread after `delay`.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any Cancellable
    /// The clock the scheduler's delays are measured on.
    var clock: any MoqClock { get }
}

/// Wraps a value that may only be touched on its session thread, so that it can be
/// captured by work handed to ``SessionScheduler/execute(_:)``.
///
/// The wrapper is `Sendable` by construction of the threading rule, not by the type
/// system: every access must happen on the scheduler's thread. The value is an object (or an
/// existential of a class-bound protocol).
public struct LoopBound<Value>: @unchecked Sendable {
    /// The wrapped value; touch it only on the session thread.
    public let value: Value
    public init(_ value: Value) { self.value = value }
}

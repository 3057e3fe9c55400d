// SPDX-License-Identifier: MIT
import Synchronization

/// A monotonic clock in nanoseconds. Sessions, caches and tests share one so that
/// the whole core can run on virtual time.
public protocol MoqClock: Sendable {
    /// Nanoseconds since an arbitrary, fixed origin.
    func now() -> UInt64
}

/// The system's monotonic clock.
public struct SystemClock: MoqClock {
    private static let origin = ContinuousClock.now
    public init() {}
    public func now() -> UInt64 {
        let d = ContinuousClock.now - Self.origin
        let (s, atto) = d.components
        return UInt64(s) * 1_000_000_000 + UInt64(atto / 1_000_000_000)
    }
}

/// A clock that moves only when told to (tests).
public final class VirtualClock: MoqClock {
    private let value: Atomic<UInt64>
    public init(start: UInt64 = 1_000_000_000) { value = Atomic(start) }
    public func now() -> UInt64 { value.load(ordering: .acquiring) }
    /// Moves the clock forward.
    public func advance(by nanoseconds: UInt64) { value.add(nanoseconds, ordering: .releasing) }
}

extension Duration {
    /// The duration in whole nanoseconds (negative durations become 0).
    public var nanoseconds: UInt64 {
        let (s, atto) = components
        if s < 0 { return 0 }
        return UInt64(s) * 1_000_000_000 + UInt64(atto / 1_000_000_000)
    }
}

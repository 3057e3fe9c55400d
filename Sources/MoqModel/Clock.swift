// SPDX-License-Identifier: MIT
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A monotonic clock in nanoseconds. Sessions, caches and tests share one so that
/// the whole core can run on virtual time.
public protocol MoqClock: Sendable {
    /// Nanoseconds since an arbitrary, fixed origin.
    func now() -> UInt64
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`, the clock the QUIC layer uses too).
public struct SystemClock: MoqClock {
    public init() {}
    public func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
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

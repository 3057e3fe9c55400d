// SPDX-License-Identifier: MIT

/// The rate a connection sends (or receives) at, measured over windows of at least 100 ms: the
/// rate of the last complete window, forgotten after a second without a byte.
struct RateMeter {
    /// Shortest window a rate is computed over (ns).
    static let window: UInt64 = 100_000_000
    /// After this long without a byte, the rate is 0 (ns).
    static let staleAfter: UInt64 = 1_000_000_000

    private var windowStart: UInt64 = 0
    private var windowBytes: UInt64 = 0
    private var lastRate: UInt64 = 0

    /// Counts `bytes` sent (or received) at `now` (monotonic ns).
    mutating func record(bytes: Int, now: UInt64) {
        if windowStart == 0 || now &- windowStart > Self.staleAfter {
            if windowStart != 0 { lastRate = 0 }
            windowStart = now
            windowBytes = 0
        }
        windowBytes &+= UInt64(bytes)
        let elapsed = now &- windowStart
        if elapsed >= Self.window {
            lastRate = UInt64(Double(windowBytes) * 8e9 / Double(elapsed))
            windowStart = now
            windowBytes = 0
        }
    }

    /// Bits per second at `now`.
    func rate(now: UInt64) -> UInt64 {
        now &- windowStart > Self.staleAfter ? 0 : lastRate
    }
}

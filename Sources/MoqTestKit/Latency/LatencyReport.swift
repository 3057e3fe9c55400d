// SPDX-License-Identifier: MIT

/// Latencies measured by a ``LatencyProbe``.
public struct LatencyReport: Sendable, Equatable, CustomStringConvertible {
    /// Every matched frame's latency, in ns, in arrival order.
    public var latencies: [UInt64]
    /// Frames stamped as published.
    public var published: Int
    /// Frames received that were never stamped as published.
    public var unmatched: Int

    /// Frames measured.
    public var count: Int { latencies.count }
    /// The median (nearest rank), or nil before any measurement.
    public var p50: Duration? { percentile(50) }
    /// The 99th percentile (nearest rank).
    public var p99: Duration? { percentile(99) }
    /// The largest latency.
    public var max: Duration? { latencies.max().map { .nanoseconds(Int64($0)) } }

    /// The `p`th percentile by nearest rank (0 < p ≤ 100).
    public func percentile(_ p: Double) -> Duration? {
        guard !latencies.isEmpty else { return nil }
        let sorted = latencies.sorted()
        let rank = Swift.max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
        return .nanoseconds(Int64(sorted[Swift.min(rank, sorted.count) - 1]))
    }

    /// `n=… p50=… p99=… max=…`.
    public var description: String {
        func ms(_ d: Duration?) -> String {
            guard let d else { return "-" }
            let (s, atto) = d.components
            return "\(Double(s) * 1000 + Double(atto) / 1e15) ms"
        }
        return "n=\(count) p50=\(ms(p50)) p99=\(ms(p99)) max=\(ms(max)) unmatched=\(unmatched)"
    }
}

// SPDX-License-Identifier: MIT

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same sequence for the same seed on
/// every platform — what tests, fault injection and the session fuzzer's replays draw from.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform draw in 0..<1.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool {
        p > 0 && (p >= 1 || unit() < p)
    }
}

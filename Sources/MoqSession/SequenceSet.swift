// SPDX-License-Identifier: MIT

/// Which group sequences of a subscription have been accounted for (a group stream, a
/// datagram or a SUBSCRIBE_DROP), as a watermark plus disjoint ranges above it.
///
/// A peer chooses the sequences, so the structure is bounded: at most ``maxRanges``
/// ranges are kept above the watermark; past that the lowest gap is given up (the
/// watermark jumps over it), which only means the reader stops waiting for groups that
/// never came. Inserting is O(log n + merged ranges); nothing is ever quadratic.
struct SequenceSet: Sendable, Equatable {
    /// Every sequence below this is accounted for.
    private(set) var watermark: UInt64
    /// Disjoint, non-adjacent ranges above the watermark, ascending.
    private(set) var ranges: [ClosedRange<UInt64>] = []
    /// The most ranges kept above the watermark.
    let maxRanges: Int

    init(watermark: UInt64 = 0, maxRanges: Int = 1024) {
        self.watermark = watermark
        self.maxRanges = max(1, maxRanges)
    }

    /// True when `sequence` is accounted for.
    func contains(_ sequence: UInt64) -> Bool {
        if sequence < watermark { return true }
        let i = firstIndex(endingAtOrAfter: sequence)
        return i < ranges.count && ranges[i].contains(sequence)
    }

    /// Moves the watermark up to `sequence` (never down), dropping what it passes.
    mutating func raiseWatermark(to sequence: UInt64) {
        guard sequence > watermark else { return }
        watermark = sequence
        normalize()
    }

    /// Records `range` as accounted for.
    mutating func insert(_ range: ClosedRange<UInt64>) {
        guard range.upperBound >= watermark else { return }
        var lower = max(range.lowerBound, watermark)
        var upper = range.upperBound
        // Ranges that overlap or touch [lower, upper] merge into it.
        let first = firstIndex(endingAtOrAfter: lower == 0 ? 0 : lower - 1)
        var last = first
        while last < ranges.count && (upper == .max || ranges[last].lowerBound <= upper + 1) {
            lower = min(lower, ranges[last].lowerBound)
            upper = max(upper, ranges[last].upperBound)
            last += 1
        }
        ranges.replaceSubrange(first..<last, with: [lower...upper])
        normalize()
        while ranges.count > maxRanges {
            // Give up the lowest gap: everything up to the first range counts as accounted for.
            watermark = ranges[0].lowerBound
            normalize()
        }
    }

    /// Folds a range starting at the watermark into it.
    private mutating func normalize() {
        var drop = 0
        while drop < ranges.count {
            let r = ranges[drop]
            if r.upperBound < watermark {
                drop += 1
            } else if r.lowerBound <= watermark {
                // upperBound ≤ 2^64 − 2 in practice (sequences are varints); saturate anyway.
                watermark = r.upperBound == .max ? .max : r.upperBound + 1
                drop += 1
            } else {
                break
            }
        }
        if drop > 0 { ranges.removeFirst(drop) }
    }

    /// The index of the first range whose upper bound is ≥ `sequence`.
    private func firstIndex(endingAtOrAfter sequence: UInt64) -> Int {
        var lo = 0
        var hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound < sequence { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

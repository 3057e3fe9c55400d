// SPDX-License-Identifier: MIT

/// Live playback's adaptive jitter margin (moqsrc `latency-mode=adaptive`): frames are rendered
/// after the pipeline's own latency plus a margin that starts at 0 and grows by what a frame at the
/// live edge was late (plus ``stepNs``), up to a ceiling (moqsrc's `latency`).
///
/// It never moves the timeline earlier by itself: moving it earlier would overlap audio. When the
/// path has been steady for ``steadyNs`` the margin's *target* shrinks (``relax(now:)``), and the
/// playout's catch-up takes the difference out by dropping whole frames at quiet moments.
public struct AdaptiveLatency: Sendable, Equatable {
    /// The most the margin may grow to (ns).
    public var ceilingNs: UInt64
    /// The margin so far (ns).
    public internal(set) var marginNs: UInt64 = 0
    /// The worst lateness seen inside a group since the last group start (ns).
    var pendingLateNs: UInt64 = 0
    /// When the margin last grew or shrank (monotonic ns).
    var changedAtNs: UInt64?

    /// Headroom added to each growth, so that the next frame a little later than this one is not
    /// late again.
    public static let stepNs: UInt64 = 10_000_000
    /// How long the path must go without a late frame before the margin shrinks.
    public static let steadyNs: UInt64 = 10_000_000_000
    /// What one relaxation takes off: an audio frame's worth, which catch-up then drops whole.
    public static let relaxStepNs: UInt64 = 20_000_000

    /// A margin of 0 that may grow to `ceilingNs`.
    public init(ceilingNs: UInt64) { self.ceilingNs = ceilingNs }

    mutating func noteLate(_ ns: UInt64) { pendingLateNs = max(pendingLateNs, ns) }

    /// The timeline anchored again (or spliced, or seeked): lateness seen before no longer counts.
    mutating func forgetLateness() { pendingLateNs = 0 }

    /// Grows the margin by the worst lateness since the last call (and `late`), plus the step,
    /// within the ceiling; returns by how much it grew. Lateness beyond the ceiling is a stall, not
    /// jitter: the margin grows by the step only (the timeline moves by the rest, and catch-up
    /// takes that back once the path is steady).
    mutating func grow(late: UInt64, now: UInt64) -> UInt64 {
        let worst = max(late, pendingLateNs)
        pendingLateNs = 0
        guard worst > 0 else { return 0 }
        let growth = worst > ceilingNs ? Self.stepNs : Saturating.add(worst, Self.stepNs)
        let target = min(ceilingNs, Saturating.add(marginNs, growth))
        guard target > marginNs else { return 0 }
        defer {
            marginNs = target
            changedAtNs = now
        }
        return target - marginNs
    }

    /// The path has been steady since `steadySince` (monotonic ns): once ``steadyNs`` have passed
    /// since then and since the last change, the margin shrinks by a step. Returns by how much.
    mutating func relax(steadySince: UInt64, now: UInt64) -> UInt64 {
        guard marginNs > 0 else { return 0 }
        let since = max(steadySince, changedAtNs ?? steadySince)
        guard now >= Saturating.add(since, Self.steadyNs) else { return 0 }
        let step = min(marginNs, Self.relaxStepNs)
        marginNs -= step
        changedAtNs = now
        return step
    }
}

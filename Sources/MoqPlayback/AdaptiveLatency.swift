// SPDX-License-Identifier: MIT

/// Live playback's adaptive jitter margin (moqsrc `latency-mode=adaptive`): frames are rendered
/// after the pipeline's own latency plus a margin that starts at 0 and grows by what a frame at the
/// live edge was late (plus ``stepNs``), up to a ceiling (moqsrc's `latency`). It never shrinks
/// while playing: shrinking would cut audio.
public struct AdaptiveLatency: Sendable, Equatable {
    /// The most the margin may grow to (ns).
    public var ceilingNs: UInt64
    /// The margin so far (ns).
    public internal(set) var marginNs: UInt64 = 0
    /// The worst lateness seen inside a group since the last group start (ns).
    var pendingLateNs: UInt64 = 0

    /// Headroom added to each growth, so that the next frame a little later than this one is not
    /// late again.
    public static let stepNs: UInt64 = 10_000_000

    /// A margin of 0 that may grow to `ceilingNs`.
    public init(ceilingNs: UInt64) { self.ceilingNs = ceilingNs }

    /// The most the timeline moves earlier in one step while settling, and how often it may (in
    /// running time). Every pad shares the offset, so a pad sees every step taken between two of its
    /// frames: 5 ms per 20 ms of running time keeps any track's timestamps monotonic whose frames
    /// last more than 7 ms (a burst of frames arriving at once sees one step).
    public static let tightenStepNs: UInt64 = 5_000_000
    public static let tightenIntervalNs: UInt64 = 20_000_000

    /// When the last step was taken (running time).
    var lastTightenNs: UInt64?

    /// What settling took off an anchor that was late, in all (ns).
    public internal(set) var tightenedNs: UInt64 = 0

    mutating func noteLate(_ ns: UInt64) { pendingLateNs = max(pendingLateNs, ns) }

    /// The timeline anchored again (or spliced, or seeked): lateness seen before no longer counts.
    mutating func forgetLateness() { pendingLateNs = 0 }

    /// A frame arrived `earlyNs` before its running time plus the margin while settling, at `now`:
    /// the step to move the timeline earlier by (0 until ``tightenIntervalNs`` after the last one).
    mutating func tighten(earlyNs: UInt64, now: UInt64) -> UInt64 {
        if let last = lastTightenNs, now < Saturating.add(last, Self.tightenIntervalNs) { return 0 }
        lastTightenNs = now
        let step = min(earlyNs, Self.tightenStepNs)
        tightenedNs = Saturating.add(tightenedNs, step)
        return step
    }

    /// Grows the margin by the worst lateness since the last call (and `late`), plus the step,
    /// within the ceiling; returns by how much it grew.
    mutating func grow(late: UInt64) -> UInt64 {
        let worst = max(late, pendingLateNs)
        pendingLateNs = 0
        guard worst > 0 else { return 0 }
        let target = min(ceilingNs, Saturating.add(Saturating.add(marginNs, worst), Self.stepNs))
        guard target > marginNs else { return 0 }
        defer { marginNs = target }
        return target - marginNs
    }
}

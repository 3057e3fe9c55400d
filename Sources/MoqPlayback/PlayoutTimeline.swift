// SPDX-License-Identifier: MIT

/// Maps a broadcast's media timestamps (µs, the publisher's clock) onto the pipeline's
/// running time (ns) with **one offset for every track**, so the A/V offset the
/// publisher recorded survives (moq-dev's moqsrc rebases each track to its own first
/// frame and loses it).
///
/// - **Anchor**: the first frame pushed anchors the timeline at the track's live edge
///   (its newest received frame maps to "now"); frames older than the live edge (the
///   start of a group joined late) land in the past and are decoded but shown only if
///   on time, so playback starts at the live edge.
/// - **Retarget** (forward only, so timestamps stay monotonic): when the live edge
///   itself arrives after its render deadline (the network got slower, or the link
///   stalled), the offset grows so the live edge maps to "now" again.
/// - **Adaptive latency** (``AdaptiveLatency``, moqsrc's default): no jitter margin at first; lateness
///   at the live edge grows one (never above a ceiling), and in the second after an anchor live
///   frames that arrive before their running time move the timeline earlier (the anchoring frame may
///   have waited in a relay's cache).
/// - **Continuity** after a reconnect or a new broadcast: the offset is kept when the
///   new frames continue the old timeline (same publisher), otherwise the timeline is
///   re-anchored after everything already pushed. When it is kept, late frames are dropped
///   rather than retargeted to for a grace period (``lateGraceUntilNs``).
/// - **Splice** (a play queue): the next broadcast, subscribed before the current one ended,
///   starts where the current one's last frame ends (``splice(epoch:)``), with no gap; frames of
///   the previous broadcast still being pushed on another pad keep the previous offset.
public struct PlayoutTimeline: Sendable, Equatable {
    /// running time = timestamp × 1000 + offset (ns); nil before the anchor.
    public private(set) var offsetNs: Int64?
    /// The latest running time pushed on any pad.
    public private(set) var latestPushedNs: UInt64 = 0
    /// Where the latest frame pushed on any pad ends (its running time plus its duration).
    public private(set) var latestEndNs: UInt64 = 0
    /// The source epoch of the last splice, and the offset before it (for that broadcast's frames
    /// still pushed after the splice). The next placement of a frame of this epoch anchors
    /// while ``awaitingSplice``.
    public private(set) var spliceEpoch: UInt64?
    private var offsetBeforeSpliceNs: Int64?
    /// Set by ``splice(epoch:)``, cleared by the first frame of the new epoch placed.
    public private(set) var awaitingSplice = false
    /// Retargets and re-anchors so far.
    public private(set) var retargets = 0
    /// Set by ``markDiscontinuity()``: the next frame decides whether the offset still holds.
    public private(set) var awaitingContinuityCheck = false
    /// Set by ``reanchorOnNextFrame()``.
    public private(set) var awaitingAnchor = false
    /// Until this running time (ns), after a discontinuity whose timeline continued, late frames
    /// are dropped rather than retargeted to: a resubscription first receives what the relay had
    /// cached (or what a publisher that reconnected after the player sends first, oldest first),
    /// and the live frames follow at once. Retargeting to the first late frame would add the whole
    /// outage to the latency for good.
    public private(set) var lateGraceUntilNs: UInt64?

    /// How long late frames are dropped after a reconnect before the timeline gives in and moves.
    public static let reconnectGraceNs: UInt64 = 2_000_000_000

    /// How far back new timestamps may start (A/V interleaving, a repeated group) and
    /// still count as the same timeline after a discontinuity.
    public static let continuityToleranceNs: UInt64 = 2_000_000_000

    /// Long-form playback: every frame is played, none skipped to catch up. The timeline is
    /// anchored at the first frame received (the oldest the relay still had within the deep
    /// budget, or the broadcast's start) rather than at the live edge; a frame that arrives after
    /// its deadline moves the timeline so that it plays now (an underrun, counted in
    /// ``retargets``), and a reconnect keeps the timeline without a grace period of drops.
    public var longForm = false

    /// Adaptive live latency (moqsrc's default `latency-mode`); nil: the budget is fixed.
    public private(set) var adaptive: AdaptiveLatency?

    /// Creates an unanchored timeline.
    /// - Parameter adaptive: live playback whose jitter margin starts at 0 and grows with what is
    ///   late (``AdaptiveLatency``); nil for a fixed budget.
    public init(longForm: Bool = false, adaptive: AdaptiveLatency? = nil) {
        self.longForm = longForm
        self.adaptive = longForm ? nil : adaptive
    }

    /// The jitter margin added to the pipeline's latency so far (ns): 0 with a fixed budget.
    public var marginNs: UInt64 { adaptive?.marginNs ?? 0 }

    /// A new ceiling for the adaptive margin (moqsrc's `latency` changed while playing): it bounds
    /// further growth; what the margin already added stays until the timeline anchors again.
    public mutating func setAdaptiveCeiling(ns: UInt64) {
        adaptive?.ceilingNs = ns
    }

    /// A frame at the live edge inside a group (not a retarget point) is about to be pushed: how
    /// late it is (beyond `toleranceNs`) is remembered, and the next group start grows the adaptive
    /// margin by it; in the settling second after an anchor, a frame that arrived before its
    /// running time moves the timeline earlier (``AdaptiveLatency/tighten(earlyNs:)``).
    public mutating func observe(
        timestampUs: UInt64, now: UInt64, latencyNs: UInt64, toleranceNs: UInt64 = 0, epoch: UInt64? = nil
    ) {
        guard adaptive != nil, offsetNs != nil, !isBeforeSplice(epoch), !isInLateGrace(now: now) else { return }
        let pts = runningTime(of: timestampUs)
        let deadline = Saturating.add(Saturating.add(pts, latencyNs), toleranceNs)
        if now > deadline { adaptive?.noteLate(now - deadline) }
        tightenIfEarly(pts: pts, now: now)
    }

    /// In the settling second after an anchor: the anchoring frame may have waited in a cache (the
    /// newest frame a relay holds is up to a frame interval old), so a live frame that arrives
    /// before its running time (plus the margin) moves the timeline earlier by that, at most
    /// ``AdaptiveLatency/tightenStepNs`` a frame so that timestamps stay monotonic.
    private mutating func tightenIfEarly(pts: UInt64, now: UInt64) {
        guard let until = settleUntilNs, now < until, let offset = offsetNs else { return }
        let target = Saturating.add(now, marginNs)
        guard pts > target, let step = adaptive?.tighten(earlyNs: pts - target, now: now), step > 0 else { return }
        offsetNs = Saturating.subtract(offset, Saturating.int64(step))
    }

    /// Until this running time (ns) after an anchor, adaptive playback tightens an anchor that
    /// was late (``tightenIfEarly(pts:now:)``).
    public private(set) var settleUntilNs: UInt64?

    /// How long after an anchor the timeline may still move earlier.
    public static let settleNs: UInt64 = 1_000_000_000

    /// What ``place(timestampUs:liveEdgeUs:now:latencyNs:)`` decided.
    public enum Placement: Sendable, Equatable {
        /// The timeline was already anchored and continues.
        case continued
        /// The timeline was anchored now (first frame, or a new timeline after a discontinuity).
        case anchored
        /// The offset grew by `ns` because the live edge was late.
        case retargeted(ns: UInt64)
    }

    /// The running time of `timestampUs`, anchoring or retargeting first when needed.
    ///
    /// - Parameters:
    ///   - liveEdgeUs: the newest timestamp received on the frame's track.
    ///   - now: the pipeline's running time.
    ///   - latencyNs: the latency budget: a frame at running time `t` is rendered at `t + latency`.
    ///   - mayRetarget: evaluate the live edge's lateness (at group starts).
    ///   - epoch: the source epoch of the frame: one from before the last splice keeps the
    ///     previous broadcast's offset (nil: the current one).
    ///   - toleranceNs: adaptive latency: lateness up to this much is not acted on (a video sink
    ///     still renders a frame 20 ms late; an audio frame late at all is a gap).
    public mutating func place(
        timestampUs: UInt64, liveEdgeUs: UInt64, now: UInt64, latencyNs: UInt64, mayRetarget: Bool = true,
        epoch: UInt64? = nil, toleranceNs: UInt64 = 0
    ) -> (pts: UInt64, placement: Placement) {
        if isBeforeSplice(epoch) { return (runningTime(of: timestampUs, epoch: epoch), .continued) }
        var placement = Placement.continued
        let edge = max(liveEdgeUs, timestampUs)
        if awaitingSplice, offsetNs != nil {
            // The next broadcast of a queue: its first frame starts where the previous one's
            // last frame ends (or now, if that already passed).
            awaitingSplice = false
            awaitingAnchor = false
            awaitingContinuityCheck = false
            lateGraceUntilNs = nil
            offsetBeforeSpliceNs = offsetNs
            settleUntilNs = nil
            adaptive?.forgetLateness()
            let at = max(latestEndNs, latestPushedNs, now)
            offsetNs = Saturating.subtract(Saturating.int64(at), Saturating.nanoseconds(micros: timestampUs))
            return (runningTime(of: timestampUs), .anchored)
        }
        if offsetNs != nil, awaitingAnchor {
            awaitingAnchor = false
            awaitingContinuityCheck = false
            anchor(edgeUs: edge, at: max(Saturating.add(now, marginNs), Saturating.add(latestPushedNs, 1_000_000)))
            placement = .anchored
        } else if let offset = offsetNs, awaitingContinuityCheck {
            awaitingContinuityCheck = false
            let candidate = Saturating.add(Saturating.nanoseconds(micros: edge), offset)
            let backwards =
                Saturating.add(candidate, Saturating.int64(Self.continuityToleranceNs))
                < Saturating.int64(latestPushedNs)
            let farAhead =
                candidate
                > Saturating.add(Saturating.int64(now), Saturating.int64(Saturating.add(latencyNs, 5_000_000_000)))
            if backwards || farAhead {
                anchor(edgeUs: edge, at: max(Saturating.add(now, marginNs), Saturating.add(latestPushedNs, 1_000_000)))
                placement = .anchored
            } else if !longForm {
                lateGraceUntilNs = Saturating.add(now, Self.reconnectGraceNs)
            }
        } else if offsetNs == nil {
            anchor(edgeUs: edge, at: Saturating.add(now, marginNs))
            placement = .anchored
        }
        if mayRetarget, placement == .continued, !isInLateGrace(now: now), let offset = offsetNs {
            let edgePts = Saturating.add(Saturating.nanoseconds(micros: edge), offset)
            let deadline = Saturating.add(edgePts, Saturating.int64(latencyNs))
            let nowNs = Saturating.int64(now)
            // Adaptive: what was late since the last group start (this edge included, beyond the
            // tolerance) grows the margin, and the offset moves by what it grew. A fixed budget (or
            // a margin at its ceiling) moves the late edge to "now", restoring the whole budget.
            let late = nowNs > deadline ? UInt64(Saturating.subtract(nowNs, deadline)) : 0
            let beyond = adaptive == nil ? late : (late > toleranceNs ? late - toleranceNs : 0)
            let grown = adaptive?.grow(late: beyond) ?? 0
            // The edge to "now" plus the margin (0 with a fixed budget), which lives in the offset.
            let catchUp =
                beyond > grown
                ? UInt64(Saturating.add(Saturating.subtract(nowNs, edgePts), Saturating.int64(marginNs))) : 0
            let shift = max(grown, catchUp)
            if shift > 0 {
                offsetNs = Saturating.add(offset, Saturating.int64(shift))
                retargets += 1
                placement = .retargeted(ns: shift)
            } else if adaptive != nil, edgePts > 0 {
                tightenIfEarly(pts: UInt64(edgePts), now: now)
            }
        }
        return (runningTime(of: timestampUs), placement)
    }

    /// Whether late frames are to be dropped rather than retargeted to (``lateGraceUntilNs``).
    public func isInLateGrace(now: UInt64) -> Bool {
        lateGraceUntilNs.map { now < $0 } ?? false
    }

    /// The running time of a timestamp on the anchored timeline (0 before the anchor).
    /// - Parameter epoch: the frame's source epoch: one from before the last splice keeps the
    ///   previous broadcast's offset (nil: the current one).
    public func runningTime(of timestampUs: UInt64, epoch: UInt64? = nil) -> UInt64 {
        let before = isBeforeSplice(epoch) ? offsetBeforeSpliceNs : nil
        guard let offset = before ?? offsetNs else { return 0 }
        let value = Saturating.add(Saturating.nanoseconds(micros: timestampUs), offset)
        return value < 0 ? 0 : UInt64(value)
    }

    /// Records a pushed running time, and where that frame ends when its duration is known.
    public mutating func pushed(_ runningTime: UInt64, endNs: UInt64? = nil) {
        latestPushedNs = max(latestPushedNs, runningTime)
        latestEndNs = max(latestEndNs, endNs ?? runningTime)
    }

    /// The next broadcast of a queue (source `epoch`) follows the current one without a gap: its
    /// first frame placed starts where the last frame pushed ends. The first pad to switch
    /// splices; a second call for the same epoch does nothing. Returns whether this call spliced.
    @discardableResult
    public mutating func splice(epoch: UInt64) -> Bool {
        guard spliceEpoch.map({ epoch > $0 }) ?? true else { return false }
        spliceEpoch = epoch
        awaitingSplice = offsetNs != nil
        if offsetNs != nil { offsetBeforeSpliceNs = offsetNs }
        return true
    }

    /// A frame of a broadcast played before the last splice (its offset is the previous one).
    private func isBeforeSplice(_ epoch: UInt64?) -> Bool {
        guard let epoch, let spliceEpoch, offsetBeforeSpliceNs != nil else { return false }
        return epoch < spliceEpoch
    }

    /// A reconnect or a new broadcast: the next placement checks continuity.
    public mutating func markDiscontinuity() {
        if offsetNs != nil { awaitingContinuityCheck = true }
    }

    /// Playback paused and resumes: the running time stood still while the broadcast went
    /// on, so the next frame anchors a new timeline after everything already pushed.
    public mutating func reanchorOnNextFrame() {
        if offsetNs != nil { awaitingAnchor = true }
    }

    /// The last seek applied (``seek(id:timestampUs:at:)``): every pad handles the same seek, the
    /// first one moves the timeline.
    public private(set) var lastSeekID: UInt64?

    /// A seek within the buffer: `timestampUs` plays at `runningTime`, and what was pushed before
    /// no longer counts (the pads flushed it). A second call with the same `id` does nothing.
    /// Returns whether this call moved the timeline.
    @discardableResult
    public mutating func seek(id: UInt64, timestampUs: UInt64, at runningTime: UInt64) -> Bool {
        guard lastSeekID != id else { return false }
        lastSeekID = id
        awaitingAnchor = false
        awaitingContinuityCheck = false
        lateGraceUntilNs = nil
        anchor(edgeUs: timestampUs, at: runningTime, settling: false)
        latestPushedNs = runningTime
        return true
    }

    /// Forgets the anchor (the element stopped); an adaptive margin starts again from 0.
    public mutating func reset() {
        self = PlayoutTimeline(longForm: longForm, adaptive: adaptive.map { AdaptiveLatency(ceilingNs: $0.ceilingNs) })
    }

    private mutating func anchor(edgeUs: UInt64, at runningTime: UInt64, settling: Bool = true) {
        if offsetNs != nil { retargets += 1 }
        // A live anchor (not a seek's) may be tightened in the second that follows.
        settleUntilNs = settling && adaptive != nil ? Saturating.add(runningTime, Self.settleNs) : nil
        adaptive?.forgetLateness()
        offsetNs = Saturating.subtract(Saturating.int64(runningTime), Saturating.nanoseconds(micros: edgeUs))
    }
}

/// Arithmetic on publisher timestamps, which are whatever a peer sent (any varint, up to
/// 2^62 − 1 µs): it saturates instead of trapping or wrapping, so a hostile or broken
/// publisher can at worst produce a timeline pinned at the end of time, never a crash.
enum Saturating {
    /// µs → ns, saturating at `Int64.max`.
    static func nanoseconds(micros: UInt64) -> Int64 {
        let (ns, overflow) = micros.multipliedReportingOverflow(by: 1000)
        return overflow ? .max : int64(ns)
    }

    /// The value, saturating at `Int64.max`.
    static func int64(_ value: UInt64) -> Int64 { Int64(clamping: value) }

    static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    static func subtract(_ a: Int64, _ b: Int64) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }

    static func add(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}

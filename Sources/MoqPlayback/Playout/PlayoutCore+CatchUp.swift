// SPDX-License-Identifier: MIT
import MoqCatalog

/// Catch-up's bookkeeping: whether the path is steady, whether the timeline is catching up, and
/// what it took out so far.
struct CatchUpState: Sendable, Equatable {
    /// Since when no frame at the live edge was late (monotonic ns).
    var steadySinceNs: UInt64?
    /// Dropping until the excess is gone.
    var active = false
    /// Audio frames dropped, and the time taken out of the timeline (ns), in all.
    var drops: UInt64 = 0
    var droppedNs: UInt64 = 0

    mutating func lateAt(_ now: UInt64) {
        steadySinceNs = now
        active = false
    }
}

extension PlayoutCore {
    /// What catch-up does to the frame being placed.
    enum CatchUpStep {
        case none
        /// Drop this (audio) frame; the next one moves the offset by its duration.
        case drop
        /// Video alone: place this frame `ns` earlier (the offset moved by that).
        case compress(ns: UInt64)
    }

    /// How long the path must be free of late frames before catch-up starts.
    public static let catchUpSteadyNs: UInt64 = 2_000_000_000
    /// Catch-up starts above this excess and stops below ``catchUpStopNs``.
    public static let catchUpStartNs: UInt64 = 30_000_000
    public static let catchUpStopNs: UInt64 = 15_000_000
    /// Video alone (no audio playing): from 10 ms down to 5 ms.
    public static let videoCatchUpStartNs: UInt64 = 10_000_000
    public static let videoCatchUpStopNs: UInt64 = 5_000_000
    /// Audio: at least this many frames between two drops (at most one in five: 25 % faster)…
    static let minFramesBetweenDrops = 4
    /// …and a frame no larger than the recent ones (a quiet moment) is waited for at most this long.
    static let maxFramesBetweenDrops = 10

    /// How far ahead of the live edge's target the timeline plays now (ns; negative: behind):
    /// the running time the live edge arriving now gets, minus now and the target margin.
    public func excessNs(now: PlayoutNow) -> Int64? {
        guard let offset = offsetNs, phase == .playing, let lead = combinedLead(now: now.monotonicNs) else {
            return nil
        }
        let toRunning = Saturating.subtract(Saturating.int64(now.runningNs), Saturating.int64(now.monotonicNs))
        let delay = Saturating.subtract(Saturating.add(offset, lead), toRunning)
        return Saturating.subtract(delay, Saturating.int64(marginNs))
    }

    /// Decides whether this frame helps catching up: an audio lane drops whole frames at quiet
    /// moments; video alone is compressed by half a frame at most per frame. Also lets an
    /// adaptive margin shrink once the path has been steady (catch-up then takes it out).
    mutating func catchUpStep(_ frame: PlayoutFrame, lane: inout Lane, now: PlayoutNow) -> CatchUpStep {
        guard let excess = excessNs(now: now), !isInGrace(now) else { return .none }
        let steadySince = catchUp.steadySinceNs ?? now.monotonicNs
        if catchUp.steadySinceNs == nil { catchUp.steadySinceNs = steadySince }
        if adaptive?.relax(steadySince: steadySince, now: now.monotonicNs) ?? 0 > 0 {
            // The target came nearer: the excess grew by that much, which is taken out at once.
            catchUp.active = true
            return .none
        }
        let steady = now.monotonicNs >= Saturating.add(steadySince, Self.catchUpSteadyNs)
        // Audio takes out whole frames: below one frame's duration nothing can go without
        // overshooting. Video alone is placed closer together by any amount, unheard.
        let audio = hasActiveLane(.audio, now: now)
        let start = audio ? Self.catchUpStartNs : Self.videoCatchUpStartNs
        let stop =
            audio
            ? max(Self.catchUpStopNs, drivingFrameDurationNs(now: now) ?? lane.frameDurationNs ?? 0)
            : Self.videoCatchUpStopNs
        if !catchUp.active, steady, excess >= Saturating.int64(start) { catchUp.active = true }
        if catchUp.active, !steady || excess < Saturating.int64(stop) { catchUp.active = false }
        guard catchUp.active else { return .none }
        switch lane.kind {
        case .audio:
            guard lane.framesSinceDrop >= Self.minFramesBetweenDrops, lane.lastPts != nil,
                excess >= Saturating.int64(lane.frameDurationNs ?? UInt64.max)
            else { return .none }
            let quiet = frame.payloadBytes <= lane.quietSize
            guard quiet || lane.framesSinceDrop >= Self.maxFramesBetweenDrops else { return .none }
            lane.framesSinceDrop = 0
            lane.droppedTimestampNs = frame.timestampNs
            return .drop
        case .video:
            // With audio playing, audio's drops move the offset for both.
            guard !hasActiveLane(.audio, now: now), let last = lane.lastPts, let duration = lane.frameDurationNs,
                let offset = offsetNs
            else { return .none }
            let ns = min(UInt64(excess), duration / 2)
            guard ns > 0, Saturating.subtract(runningTime(of: frame), Saturating.int64(ns)) > last else { return .none }
            offsetNs = Saturating.subtract(offset, Saturating.int64(ns))
            catchUp.droppedNs = Saturating.add(catchUp.droppedNs, ns)
            return .compress(ns: ns)
        }
    }

    /// The frame duration of the track catch-up drops from: audio's while it plays, else video's.
    func drivingFrameDurationNs(now: PlayoutNow) -> UInt64? {
        let kind: MediaKind = hasActiveLane(.audio, now: now) ? .audio : .video
        return lanes.lazy.compactMap { $0 }.first { $0.kind == kind && $0.frameDurationNs != nil }?.frameDurationNs
    }

    /// The audio frame after one catch-up dropped: the offset moves earlier by exactly the dropped
    /// frame's duration (this frame's timestamp minus its), so this frame starts where the last
    /// frame pushed ended: no gap, no overlap.
    mutating func applyDroppedDuration(_ frame: PlayoutFrame, lane: inout Lane) {
        guard let dropped = lane.droppedTimestampNs else { return }
        lane.droppedTimestampNs = nil
        guard let offset = offsetNs, frame.timestampNs > dropped else { return }
        var duration = frame.timestampNs - dropped
        // A frame missing after the dropped one (lost on the way): move by the usual spacing only.
        if let usual = lane.frameDurationNs, duration > usual * 2 { duration = usual }
        offsetNs = Saturating.subtract(offset, Saturating.int64(duration))
        catchUp.drops += 1
        catchUp.droppedNs = Saturating.add(catchUp.droppedNs, duration)
    }
}

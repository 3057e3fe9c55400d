// SPDX-License-Identifier: MIT
import MoqCatalog

/// Lateness: what arrives after its render deadline moves the timeline later (a retarget).
extension PlayoutCore {
    /// Live: when the live edge arrived after its render deadline (beyond what a sink tolerates),
    /// the timeline moves later: an adaptive margin grows by it (plus a step, within its ceiling),
    /// a fixed budget is restored in full. Lateness is measured at arrival (the network's, not the
    /// pad's while it works through a backlog). An adaptive margin also grows by a frame near the
    /// edge that arrived late itself (overtaken by a newer one: groups travel on parallel streams).
    /// Not during the grace after a reconnect. Returns the shift.
    mutating func retargetIfLate(
        _ frame: PlayoutFrame, kind: MediaKind, view: LaneView, now: PlayoutNow
    ) -> UInt64? {
        guard let offset = offsetNs, !isInGrace(now) else { return nil }
        let toRunning = Saturating.subtract(Saturating.int64(now.runningNs), Saturating.int64(now.monotonicNs))
        let nowNs = Saturating.int64(now.runningNs)
        func arrived(_ arrivalNs: UInt64?) -> Int64 {
            arrivalNs.map { Saturating.add(Saturating.int64($0), toRunning) } ?? nowNs
        }
        let isEdge = view.edge.map { $0.timestampUs <= frame.timestampUs } ?? true
        let edgeUs = isEdge ? frame.timestampUs : view.edge?.timestampUs ?? frame.timestampUs
        let edgeArrival = arrived(isEdge ? frame.arrivalNs ?? view.edge?.arrivalNs : view.edge?.arrivalNs)
        let edgePts = Saturating.add(Saturating.nanoseconds(micros: edgeUs), offset)
        let deadline = Saturating.add(edgePts, Saturating.int64(renderDelayNs))
        var late = edgeArrival > deadline ? UInt64(Saturating.subtract(edgeArrival, deadline)) : 0
        let recovering = isRecovering(now)
        if let adaptive, !isEdge, !recovering, let frameArrival = frame.arrivalNs,
            lanes[frame.lane.index]?.clipNs == nil,
            Saturating.nanosecondsUnsigned(micros: edgeUs - frame.timestampUs) <= adaptive.ceilingNs
        {
            // One far behind the edge is a backlog, late by design.
            let framePts = Saturating.add(Saturating.int64(frame.timestampNs), offset)
            let frameDeadline = Saturating.add(framePts, Saturating.int64(renderDelayNs))
            let arrival = arrived(frameArrival)
            if arrival > frameDeadline { late = max(late, UInt64(Saturating.subtract(arrival, frameDeadline))) }
        }
        let tolerance = Self.lateTolerance(kind)
        let beyond = adaptive == nil ? late : Saturating.minus(late, tolerance)
        if beyond > 0 { catchUp.lateAt(now.monotonicNs) }
        // A stall's backlog is late by what the stall lasted: the timeline moves, the margin does not.
        let grown = recovering ? 0 : adaptive?.grow(late: beyond, now: now.monotonicNs) ?? 0
        // The edge to its arrival plus the margin (0 with a fixed budget), which lives in the offset.
        let restore =
            beyond > grown
            ? Saturating.unsigned(Saturating.add(Saturating.subtract(edgeArrival, edgePts), Saturating.int64(marginNs)))
            : 0
        let shift = max(grown, restore)
        guard shift > 0 else { return nil }
        offsetNs = Saturating.add(offset, Saturating.int64(shift))
        retargets += 1
        markAllLanesDiscontinuous()
        return shift
    }

    /// Adaptive: a frame at the live edge that arrived late inside a group grows the margin at the
    /// next group start (older frames of a group joined late are expected to be late).
    mutating func observeMidGroup(
        _ frame: PlayoutFrame, kind: MediaKind, pts: Int64, view: LaneView, now: PlayoutNow
    ) {
        guard adaptive != nil, !isInGrace(now), !isRecovering(now), let edge = view.edge,
            frame.timestampUs >= edge.timestampUs
        else { return }
        let toRunning = Saturating.subtract(Saturating.int64(now.runningNs), Saturating.int64(now.monotonicNs))
        let arrival = Saturating.add(Saturating.int64(frame.arrivalNs ?? edge.arrivalNs), toRunning)
        let deadline = Saturating.add(
            Saturating.add(pts, Saturating.int64(renderDelayNs)), Saturating.int64(Self.lateTolerance(kind)))
        guard arrival > deadline else { return }
        adaptive?.noteLate(UInt64(Saturating.subtract(arrival, deadline)))
        catchUp.lateAt(now.monotonicNs)
    }

    /// Whether a stall's backlog is still arriving (``recoveringUntilNs``).
    func isRecovering(_ now: PlayoutNow) -> Bool { recoveringUntilNs.map { now.monotonicNs < $0 } ?? false }
}

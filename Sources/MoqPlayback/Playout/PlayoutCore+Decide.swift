// SPDX-License-Identifier: MIT
import MoqCatalog

extension PlayoutCore {
    /// What to do with `frame`, given what its lane's reader knows (`view`) at `now`. A push is
    /// recorded as done: the pad pushes it.
    public mutating func decide(_ frame: PlayoutFrame, view: LaneView, now: PlayoutNow) -> PlayoutDecision {
        let i = frame.lane.index
        guard lanes.indices.contains(i), var lane = lanes[i] else { return .drop(.restOfGroup) }
        observeEdge(frame.lane, view.edge, now: now)
        lane = lanes[i] ?? lane
        let longForm = policy.mode == .longForm
        if longForm, lane.isLongFormRepeat(frame) { return .drop(.repeated) }
        if lane.checkPositionAtFirstGroup {
            guard frame.startsGroup else { return .drop(.repeated) }
            lane.checkPositionAtFirstGroup = false
            lanes[i] = lane
            if phase == .checkingContinuity { resolveContinuity(frame, view: view, now: now) }
            lane = lanes[i] ?? lane
            if let last = lane.lastPosition, frame.timestampUs > last.timestampUs { lane.lastPosition = nil }
            // A new timeline forgot what the tracks knew of the live edge: this frame's counts again.
            lanes[i] = lane
            observeEdge(frame.lane, view.edge, now: now)
            lane = lanes[i] ?? lane
        }
        if let drop = lane.filtered(frame) {
            lanes[i] = lane
            return .drop(drop)
        }
        if let floor = lane.switchFloorNs {
            if frame.timestampNs <= floor {
                // Another rendition took over mid-group: what the previous one already showed is
                // decoded (the frames after it need it), on its own running time, and not shown.
                // Ending before the last frame shown ends, even if the timeline moved since (a
                // retarget): the segment that starts there clips them, as the flag alone may not. (A
                // decoder clips a frame that ends exactly at the segment's start to a zero-length
                // one there and shows it: so one frame earlier still.)
                var pts = offsetNs == nil ? Self.beforeRunningTimeNs : runningTime(of: frame)
                if let last = lane.lastPts, offsetNs != nil {
                    let latest = Saturating.subtract(last, Saturating.int64(lane.frameDurationNs ?? 40_000_000))
                    let floorPts = Saturating.add(Saturating.int64(floor), offset(for: frame.epoch) ?? 0)
                    pts = min(Saturating.subtract(pts, max(0, Saturating.subtract(floorPts, latest))), latest)
                }
                let push = PlayoutPush(
                    pts: pts, discont: lane.discontPending, decodeOnly: true, segmentStartNs: lane.pendingSegmentNs)
                lane.discontPending = false
                lane.pendingSegmentNs = nil
                lanes[i] = lane
                return .push(push)
            }
            lane.switchFloorNs = nil
            lanes[i] = lane
        }
        if tuning.primesAudio, !longForm, lane.kind == .audio, !lane.primedBeforeFirstPush, lane.lastPts == nil {
            // Audio's first frame sets up its decoder first, without a sound (decodebin plugs it: 0.16 s
            // loading opusdec): pushed, it would block there and the frames behind it miss their
            // time. A join waits for it (while joining, audio's frames are held anyway).
            lane.primedBeforeFirstPush = true
            lane.priming = true
            lanes[i] = lane
            return .hold(untilNs: now.monotonicNs, primes: true)
        }
        lanes[i] = lane
        var note: PlayoutNote?
        if !isBeforeSplice(frame.epoch) {
            switch phase {
            case .checkingContinuity:
                resolveContinuity(frame, view: view, now: now)
                if case .joining = phase { return decide(frame, view: view, now: now) }
            case .joining(let since, let floorNs):
                if longForm {
                    // Every frame plays: the timeline starts at the earliest first frame of every
                    // track (audio's deep buffer starts before video's first keyframe), so wait a
                    // moment for each track's first frame.
                    let started = since ?? now.monotonicNs
                    if since == nil { phase = .joining(since: started, floorNs: floorNs) }
                    if lanes[i]?.firstTimestampNs == nil { lanes[i]?.firstTimestampNs = frame.timestampNs }
                    let firsts = lanes.compactMap { $0 }.map(\.firstTimestampNs)
                    let deadline = Saturating.add(started, tuning.maxJoinWaitNs)
                    if firsts.contains(nil), now.monotonicNs < deadline {
                        return .hold(untilNs: min(deadline, Saturating.add(now.monotonicNs, 5_000_000)))
                    }
                    let earliest = firsts.compactMap { $0 }.min() ?? frame.timestampNs
                    anchor(timestampNs: earliest, at: max(now.runningNs, floorNs))
                    for index in lanes.indices { lanes[index]?.firstTimestampNs = nil }
                    phase = .playing
                    note = .anchored
                } else {
                    let started = since ?? now.monotonicNs
                    if since == nil { phase = .joining(since: started, floorNs: floorNs) }
                    let deadline = Saturating.add(started, tuning.maxJoinWaitNs)
                    let settling = !clocksSettled && now.monotonicNs < deadline
                    // The first pushes set up what is downstream (a decoder plugged): no frame is
                    // placed on a timeline that a pad blocked in its first push would miss.
                    let primeDeadline = Saturating.add(started, Self.maxPrimeWaitNs)
                    let priming = tuning.waitsForFirstPushes && isPriming && now.monotonicNs < primeDeadline
                    // Until every sink prerolled (on the pads' GAPs), a buffer reaching one waits
                    // there for the slowest branch: placed now, audio's first frames would be late.
                    let playingDeadline = Saturating.add(started, Self.maxPlayingWaitNs)
                    let preparing = tuning.waitsForPlaying && !pipelinePlaying && now.monotonicNs < playingDeadline
                    if settling || priming || preparing {
                        if let early = decodeWhileJoining(frame, lane: &lane, now: now) {
                            lanes[i] = lane
                            return .push(early)
                        }
                        // Asked again at the deadline itself: where the join clips depends on when.
                        let due = settling ? deadline : priming ? primeDeadline : playingDeadline
                        return .hold(untilNs: min(due, Saturating.add(now.monotonicNs, 5_000_000)))
                    }
                    note = .joined(clipNs: join(frame, view: view, now: now, floorNs: floorNs))
                }
            case .splicing(let epoch) where frame.epoch >= epoch:
                if lane.kind == .video, hasActiveLane(.audio, now: now) {
                    let since = lane.spliceHoldSince ?? now.monotonicNs
                    lanes[i]?.spliceHoldSince = since
                    if now.monotonicNs < Saturating.add(since, Self.spliceHoldNs) {
                        return .hold(untilNs: Saturating.add(now.monotonicNs, 5_000_000))
                    }
                }
                spliceAnchor(frame, now: now)
                note = .spliced
            case .splicing, .playing: break
            }
        }
        lane = lanes[i] ?? lane
        return place(frame, lane: lane, view: view, now: now, note: note)
    }

    /// The first join of video: while the live edge settles, the group's frames from its keyframe
    /// go to the decoder at once, decode-only and stamped an hour before running time 0 (the
    /// default segment clips them), so that the decoder has caught up when the live edge is placed.
    /// The first of them sets up what is downstream (decodebin plugs a decoder, loading its
    /// plugin): the join waits for that push to return (``PlayoutPush/primes``). Audio's frames
    /// wait (each must play once it is placed: its first may start an output that continues).
    /// Whatever of them would have been shown is at most the wait's few frames.
    private func decodeWhileJoining(_ frame: PlayoutFrame, lane: inout Lane, now: PlayoutNow) -> PlayoutPush? {
        guard tuning.clipsAtJoin, lane.kind == .video, offsetNs == nil, lane.lastPts.map({ $0 < 0 }) ?? true else {
            return nil
        }
        let pts = Saturating.add(lane.lastPts ?? Self.beforeRunningTimeNs, 1_000_000)
        var push = PlayoutPush(pts: pts, discont: lane.discontPending, decodeOnly: true)
        if lane.lastPts == nil {
            push.primes = true
            push.prerolls = tuning.waitsForPlaying && !pipelinePlaying
            lane.priming = true
        }
        lane.discontPending = false
        lane.pushed(frame, pts: pts, now: now.monotonicNs)
        return push
    }

    /// Where frames decoded while a join waits are stamped (running time, ns): an hour before 0.
    public static let beforeRunningTimeNs: Int64 = -3_600_000_000_000

    /// Places a frame on the anchored timeline: lateness, the join's clip point, catch-up.
    private mutating func place(
        _ frame: PlayoutFrame, lane current: Lane, view: LaneView, now: PlayoutNow, note: PlayoutNote?
    ) -> PlayoutDecision {
        let i = frame.lane.index
        var lane = current
        var note = note
        var decodeOnly = false
        let live = policy.mode != .longForm
        let previousEpoch = isBeforeSplice(frame.epoch)
        let nowNs = Saturating.int64(now.runningNs)
        let renderDelay = Saturating.int64(renderDelayNs)
        if live, !previousEpoch { applyDroppedDuration(frame, lane: &lane) }
        var pts = runningTime(of: frame)
        if live && !previousEpoch {
            if lane.kind == .audio, let clip = lane.clipNs, pts < clip {
                // Before the join point: audio starts there (every frame decodes alone).
                lanes[i] = lane
                return .drop(.beforeJoin)
            }
            if frame.startsGroup || lane.kind == .audio {
                lanes[i] = lane
                if let shift = retargetIfLate(frame, kind: lane.kind, view: view, now: now) {
                    note = note ?? .retargeted(ns: shift)
                }
                lane = lanes[i] ?? lane
                pts = runningTime(of: frame)
                if Saturating.add(pts, renderDelay) < nowNs, view.hasNewerGroup || isInGrace(now) {
                    // Too late to be shown and a newer group is here (or, just after a reconnect on
                    // the same timeline, coming): skip to it.
                    lane.skipping = frame.group
                    lane.discontPending = true
                    lanes[i] = lane
                    return .skipGroup(.late)
                }
            } else {
                observeMidGroup(frame, kind: lane.kind, pts: pts, view: view, now: now)
            }
            if let clip = lane.clipNs {
                if pts < clip {
                    if lane.kind == .audio {
                        lanes[i] = lane
                        return .drop(.beforeJoin)
                    }
                    decodeOnly = true
                    if let last = lane.lastPts, pts <= last { pts = min(Saturating.add(last, 1000), clip - 1) }
                } else {
                    lane.clipNs = nil
                }
            }
            if !decodeOnly, policy.catchUp {
                lanes[i] = lane
                switch catchUpStep(frame, lane: &lane, now: now) {
                case .drop:
                    lanes[i] = lane
                    return .drop(.catchUp)
                case .compress(let ns):
                    pts = Saturating.subtract(pts, Saturating.int64(ns))
                case .none: break
                }
            }
        } else if !live, !previousEpoch, let offset = offsetNs, Saturating.add(pts, renderDelay) < nowNs {
            // Long-form: an underrun. The frame plays now, with the whole render delay again.
            let shift = Saturating.subtract(nowNs, pts)
            offsetNs = Saturating.add(offset, shift)
            retargets += 1
            markAllLanesDiscontinuous()
            lane.discontPending = true
            pts = nowNs
            note = note ?? .retargeted(ns: Saturating.unsigned(shift))
        }
        var push = PlayoutPush(
            pts: pts, discont: lane.discontPending, decodeOnly: decodeOnly, segmentStartNs: lane.pendingSegmentNs,
            note: note)
        push.renderDelayNs = renderDelayNs
        lane.discontPending = false
        lane.pendingSegmentNs = nil
        lane.pushed(frame, pts: pts, now: now.monotonicNs)
        latestPushedNs = max(latestPushedNs, Saturating.unsigned(pts))
        lanes[i] = lane
        return .push(push)
    }

    // MARK: The timeline's moves

    /// The running time of a frame on its epoch's offset (0 before the first anchor); negative for
    /// a frame from before the pipeline's running time began (a join's decode-only frames).
    func runningTime(of frame: PlayoutFrame) -> Int64 {
        guard let offset = offset(for: frame.epoch) else { return 0 }
        return Saturating.add(Saturating.int64(frame.timestampNs), offset)
    }

    /// A frame of a broadcast played before the last splice.
    func isBeforeSplice(_ epoch: UInt64) -> Bool {
        guard let previous = beforeSplice, offsetNs != nil else { return false }
        return epoch < previous.epoch
    }

    func isInGrace(_ now: PlayoutNow) -> Bool { graceUntilNs.map { now.runningNs < $0 } ?? false }

    /// Live: the live edge (``EdgeClock``) plays `target` after now; what would render before now
    /// (plus the time a frame needs to get there) is before the join point. Returns that point.
    private mutating func join(_ frame: PlayoutFrame, view: LaneView, now: PlayoutNow, floorNs: UInt64) -> Int64 {
        // No sample at all cannot happen (the frame's own track was sampled), but a frame
        // without one would anchor on itself.
        let lead =
            combinedLead(now: now.monotonicNs)
            ?? Saturating.subtract(Saturating.int64(frame.timestampNs), Saturating.int64(now.monotonicNs))
        let toRunning = Saturating.subtract(Saturating.int64(now.runningNs), Saturating.int64(now.monotonicNs))
        if offsetNs != nil { retargets += 1 }
        adaptive?.forgetLateness()
        offsetNs = Saturating.add(Saturating.subtract(toRunning, lead), Saturating.int64(marginNs))
        phase = .playing
        graceUntilNs = nil
        // Not before running time 0: nothing rendered before it can be on time (and a segment
        // cannot start there).
        let clip = Saturating.int64(
            max(Saturating.minus(Saturating.add(now.runningNs, Self.joinSlackNs), renderDelayNs), floorNs))
        // Audio starts where its sink can still play it. An audio sink's own latency (its device
        // buffer: 200 ms by default) is part of the render delay, and it reads that far ahead of
        // what is heard: a sample due sooner than that is dropped as late (alsasink, pulsesink).
        // What is due after our own share of the latency (0 when adaptive) reaches it in time.
        let reach = Saturating.minus(Saturating.add(now.runningNs, Self.joinSlackNs), policy.reportedLatencyNs)
        let audioClip = max(clip, Saturating.int64(max(reach, floorNs)))
        lastJoin = (Saturating.unsigned(clip), now.monotonicNs)
        catchUp = CatchUpState(steadySinceNs: now.monotonicNs, drops: catchUp.drops, droppedNs: catchUp.droppedNs)
        for index in lanes.indices where tuning.clipsAtJoin {
            let laneClip = tuning.audioJoinsWithinReach && lanes[index]?.kind == .audio ? audioClip : clip
            lanes[index]?.clipNs = laneClip
            lanes[index]?.pendingSegmentNs = laneClip
        }
        for index in lanes.indices {
            lanes[index]?.discontPending = true
            lanes[index]?.droppedTimestampNs = nil
        }
        return clip
    }

    /// The queue's next broadcast: its first frame starts where the last frame pushed ends (or
    /// now, if that already passed), on the new publisher's clock.
    private mutating func spliceAnchor(_ frame: PlayoutFrame, now: PlayoutNow) {
        let at = max(latestEndNs, latestPushedNs, now.runningNs)
        adaptive?.forgetLateness()
        offsetNs = Saturating.subtract(Saturating.int64(at), Saturating.int64(frame.timestampNs))
        phase = .playing
        graceUntilNs = nil
        resetClocks()
        catchUp = CatchUpState(steadySinceNs: now.monotonicNs, drops: catchUp.drops, droppedNs: catchUp.droppedNs)
        for index in lanes.indices {
            lanes[index]?.discontPending = true
            lanes[index]?.spliceHoldSince = nil
            lanes[index]?.clipNs = nil
            lanes[index]?.droppedTimestampNs = nil
        }
    }

    /// After a reconnect: the same publisher's timestamps continue the timeline (late backlog
    /// frames are then dropped for a grace period); a restarted publisher (timestamps far back) or
    /// a clock that jumped far ahead starts a new timeline after what was pushed.
    mutating func resolveContinuity(_ frame: PlayoutFrame, view: LaneView, now: PlayoutNow) {
        guard phase == .checkingContinuity, let offset = offsetNs else { return }
        let live = policy.mode != .longForm
        let edgeUs = live ? max(view.edge?.timestampUs ?? frame.timestampUs, frame.timestampUs) : frame.timestampUs
        let candidate = Saturating.add(Saturating.nanoseconds(micros: edgeUs), offset)
        let backwards =
            Saturating.add(candidate, Saturating.int64(Self.continuityToleranceNs)) < Saturating.int64(latestPushedNs)
        let limit = Saturating.add(Saturating.add(now.runningNs, renderDelayNs), 5_000_000_000)
        let farAhead = candidate > Saturating.int64(limit)
        if backwards || farAhead {
            resetClocks()
            phase = .joining(since: nil, floorNs: max(latestEndNs, Saturating.add(latestPushedNs, 1_000_000)))
            for index in lanes.indices {
                lanes[index]?.lastPosition = nil
                lanes[index]?.checkPositionAtFirstGroup = false
            }
            return
        }
        phase = .playing
        if live { graceUntilNs = Saturating.add(now.runningNs, Self.reconnectGraceNs) }
    }

    /// How late a frame may be before it counts: video sinks still render a frame 20 ms late
    /// (their default `max-lateness`); a late audio frame is a gap.
    static func lateTolerance(_ kind: MediaKind) -> UInt64 { kind == .video ? 20_000_000 : 0 }

    mutating func markAllLanesDiscontinuous() {
        for index in lanes.indices { lanes[index]?.discontPending = true }
    }

    /// Feeds a lane's newest frame to the clock, once per frame (live playback only).
    mutating func observeEdge(_ id: LaneID, _ edge: EdgeSample?, now: PlayoutNow) {
        guard policy.mode != .longForm, let edge, lanes.indices.contains(id.index), let lane = lanes[id.index],
            lane.lastEdge != edge
        else { return }
        lanes[id.index]?.lastEdge = edge
        // (A gap of several frames' spacing at least: a slide show is not stalled between slides.)
        let gap = max(Self.stallGapNs, Saturating.add(0, 4 &* (lane.frameDurationNs ?? 0)))
        if phase == .playing, let previous = lane.lastEdge, edge.arrivalNs > Saturating.add(previous.arrivalNs, gap) {
            // Nothing arrived for a while: what comes now is the stall's backlog.
            recoveringUntilNs = Saturating.add(edge.arrivalNs, Self.stallRecoveryNs)
            catchUp.lateAt(now.monotonicNs)
        }
        lanes[id.index]?.clock.observe(
            timestampNs: Saturating.nanosecondsUnsigned(micros: edge.timestampUs), arrivalNs: edge.arrivalNs,
            now: now.monotonicNs)
    }

    /// Whether a lane of `kind` pushed within the last second.
    func hasActiveLane(_ kind: MediaKind, now: PlayoutNow) -> Bool {
        lanes.contains { lane in
            guard let lane, lane.kind == kind, let at = lane.lastPushAtNs else { return false }
            return now.monotonicNs < Saturating.add(at, 1_000_000_000)
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqCatalog
import MoqMedia
import MoqPlayback
import MoqSync
import SwiftMoQ

/// Adaptive bitrate on the video pad: ``AdaptiveBitrate`` decides, this carries it out.
///
/// - A step down switches at once: the new rung is subscribed from its current group, whose
///   frames up to the last one shown are decoded but not shown (the playout's rendition reset),
///   and the old subscription ends (its data stops taking the path). When that group started
///   long ago and the next is due soon, the pad stops it and starts at the next instead
///   (``StepDownStart``, ``skipsStaleGroup(_:reader:src:)``).
/// - A step up is a trial: the next rung is subscribed beside the current one at a lower priority
///   (the relay sends it only with what the current one leaves), from its next group
///   (``TrialStart``; without one, its group in progress is stopped at once,
///   ``stopStaleTrialGroups(_:src:)``); once one of its groups that
///   started after the trial began has arrived with the moment about to be shown, and both rungs
///   keep up, it takes over at that group's start (see ``trialTakesOver(before:src:)``); else the
///   current rung plays on, until the trial is abandoned.
/// - New caps go downstream with the first frame of the new rung (decoders renegotiate); the
///   stream (its id, in the collection) stays the same: it is one picture.
///
/// Streaming thread only, except ``adaptiveSnapshot`` (the stats).
extension SrcPad {
    /// The pad's adaptive bitrate while a ladder plays.
    struct Adaptive {
        var abr: AdaptiveBitrate
        /// A trial's subscription, and its first frame of a group after the last shown.
        var candidate: Candidate?
        var lastSampleNs: UInt64 = 0
        /// After a step down, until the new rung's first group is read: where it may start.
        var stepDown: StepDownStart?
        /// Where trials start (the higher rung's next group), and what it learnt of the numberings.
        var trialStart = TrialStart()
        /// A step down that asked for the lower rung's next group, until a frame of it arrives.
        var floorWait: FloorWait?
    }

    /// A subscription's floor, and when it is given up if nothing came.
    struct FloorWait {
        var sequence: UInt64
        var deadlineNs: UInt64
    }

    /// A trial's subscription.
    struct Candidate {
        var source: Source
        var remote: RemoteTrack
        var reader: TrackReader
        /// The last frame shown when the trial began (µs): its groups that start after it say how
        /// the path carries it (what it fetched of the group in progress does not).
        var sinceUs: UInt64
        /// The group it asked to start at (``TrialStart``), if any.
        var floor: UInt64?
        /// Whether its first group taught ``TrialStart`` the numberings.
        var learnt = false
    }

    /// What the stats report.
    struct AdaptiveSnapshot: Sendable, Equatable {
        var rendition: String
        var estimateBps: Double?
        var latenessMs: Double
        var stats: AdaptiveBitrate.Stats
    }

    /// How often the path is sampled.
    static let adaptiveSampleNs: UInt64 = 100_000_000
    /// A trial's subscription: below video's and audio's, so that it takes only spare capacity.
    static let trialPriority: UInt8 = 0

    /// A ladder plays on this pad from `source` (its rung in the ladder), or none does.
    func startAdaptive(_ source: Source) {
        endTrial()
        guard let ladder = source.ladder, let rung = ladder.index(of: source.trackName) else {
            adaptive = nil
            publishAdaptive()
            return
        }
        adaptive = Adaptive(abr: AdaptiveBitrate(ladder: ladder, start: rung, nowNs: monotonicNow()))
        publishAdaptive()
    }

    /// A new catalog while a ladder plays on the same subscription: the current rung stays if it
    /// is still offered. Returns whether it did (else the caller starts again).
    func keepRung(_ next: Source) -> Bool {
        guard var state = adaptive, let ladder = next.ladder, let current = source, current.session === next.session,
            current.broadcast == next.broadcast, current.epoch == next.epoch, reader != nil,
            state.abr.update(ladder: ladder)
        else { return false }
        if state.abr.trial == nil, let candidate = state.candidate {
            candidate.remote.cancel()
            state.candidate = nil
        }
        adaptive = state
        source = next.with(state.abr.currentRung.playable)
        return true
    }

    /// Samples the path and carries out the advice (every ``adaptiveSampleNs``).
    func adaptiveStep(src: MoqSrc) {
        guard adaptive != nil, reader != nil, source != nil else { return }
        floorWaitExpired(src: src)
        guard var state = adaptive, let reader else { return }
        let now = monotonicNow()
        guard now >= state.lastSampleNs &+ Self.adaptiveSampleNs else { return }
        state.lastSampleNs = now
        let bytes = reader.track.payloadBytes &+ (state.candidate?.reader.track.payloadBytes ?? 0)
        let edge = reader.edge.map { (timestampNs: SrcPad.nanoseconds($0.timestampUs), arrivalNs: $0.arrivalNs) }
        // Audio shares the path: its bytes count in what the path carries.
        let other = src.run?.pads[.audio]?.readerRef.withLock { $0 }?.track.payloadBytes ?? 0
        let wire = source?.session.receivedBytes ?? 0
        state.abr.observe(nowNs: now, bytes: bytes, otherBytes: other, wireBytes: wire, newest: edge)
        src.reporter.log(
            GST_LEVEL_LOG,
            "\(name): abr sample \(reader.track.name) bytes \(bytes) edge \(reader.edge.map { "\($0.group)/\($0.count) \($0.timestampUs / 1000) ms" } ?? "-") "
                + "lateness \(state.abr.latenessNs / 1_000_000) ms, capacity \(Int((state.abr.capacityBps ?? 0) / 1000)) video \(Int((state.abr.videoBudgetBps ?? 0) / 1000)) probe \(Int((state.abr.probeBps ?? 0) / 1000)) kbit/s"
        )
        if let candidate = state.candidate {
            stopStaleTrialGroups(candidate, src: src)
            if !candidate.learnt, let first = candidate.reader.groupStart(atOrAfter: 0),
                let same = reader.groupStart(atOrBefore: first.startUs), same.startUs == first.startUs
            {
                state.trialStart.learn(
                    rung: candidate.source.trackName, sequence: first.sequence, playing: reader.track.name,
                    playingSequence: same.sequence)
                state.candidate?.learnt = true
            }
            // Judged from its first group that started after the trial began.
            let fresh = candidate.reader.groupStart(atOrAfter: candidate.sinceUs &+ 1) != nil
            let newest = fresh ? candidate.reader.edge.map { SrcPad.nanoseconds($0.timestampUs) } : nil
            state.abr.observeTrial(nowNs: now, newestTimestampNs: newest)
        }
        if let probe = src.probeBps { state.abr.probed(bps: probe) }
        if let candidate = state.candidate {
            src.reporter.log(
                GST_LEVEL_LOG,
                "\(name): abr trial \(candidate.reader.track.name) bytes \(candidate.reader.track.payloadBytes) edge "
                    + "\(candidate.reader.edge.map { "\($0.group)/\($0.count) \($0.timestampUs / 1000) ms" } ?? "-"), "
                    + "last shown \(lastPushedUs.load(ordering: .relaxed) / 1000) ms")
        }
        let advice = state.abr.advise(nowNs: now)
        adaptive = state
        switch advice {
        case .stay: break
        case .down(let rung, let reason):
            endTrial()
            switchRung(to: rung, reason: reason, src: src)
        case .tryUp(let rung, let reason):
            beginTrial(rung, reason: reason, src: src)
        case .abandonTrial(let reason):
            src.reporter.log(GST_LEVEL_INFO, "\(name): trial of a higher rendition abandoned: \(reason)")
            // Its floor named a group that did not come in three groups' time: the numberings
            // differ (``TrialStart``). (A trial abandoned sooner says nothing about its floor.)
            let waitedUs = 3 * min(reader.groupDurationUs ?? 1_000_000, 2_000_000)
            if let candidate = state.candidate, let floor = candidate.floor,
                let since = state.abr.trial?.sinceNs, now >= since &+ waitedUs * 1_000,
                candidate.reader.groupStart(atOrAfter: 0) == nil
            {
                src.reporter.log(
                    GST_LEVEL_INFO,
                    "\(name): no group \(floor) of \(candidate.source.trackName) came: trials start at the group in progress"
                )
                adaptive?.trialStart.floorFailed()
            }
            endTrial()
            adaptive?.abr.trialFailed(nowNs: now)
        }
        publishAdaptive()
    }

    /// Subscribes `rung` beside the current one.
    private func beginTrial(_ rung: Int, reason: String, src: MoqSrc) {
        guard var state = adaptive, let source else { return }
        let next = source.with(state.abr.ladder.rungs[rung].playable)
        var range = policy.range(finite: next.finite)
        range.priority = Self.trialPriority
        let floor = reader?.edge.flatMap {
            state.trialStart.floor(for: next.trackName, playing: source.trackName, sequence: $0.group)
        }
        if let floor { range.groupStart = floor }
        let remote = next.session.subscribe(
            broadcast: next.broadcast, track: next.trackName, range: range,
            limits: policy.cacheLimits(finite: next.finite))
        let reader = policy.reader(
            for: remote.track, renderDelayMs: playout.renderDelayNs / 1_000_000, finite: next.finite,
            cmaf: next.cmafTrack)
        state.candidate = Candidate(
            source: next, remote: remote, reader: reader, sinceUs: lastPushedUs.load(ordering: .relaxed), floor: floor)
        state.abr.trialStarted(to: rung, nowNs: monotonicNow())
        adaptive = state
        src.reporter.log(
            GST_LEVEL_INFO,
            "\(name): trying \(next.trackName) (\(reason)) from group \(floor.map(String.init) ?? "in progress")")
    }

    /// Without a floor (``TrialStart``), a trial's subscription starts at its rung's group in
    /// progress, fetched from its start:
    /// a burst of up to a group of the higher rung, on a path that may not carry it, that the
    /// trial never plays (it takes over at a group that starts after it began). Those groups are
    /// stopped as soon as they are seen (STOP_SENDING at their next frame), so that the burst
    /// ends within a sample and a round trip instead of filling the bottleneck's queue in front
    /// of the rung that plays and the audio.
    private func stopStaleTrialGroups(_ candidate: Candidate, src: MoqSrc) {
        for sequence in candidate.reader.openGroups(startedBefore: candidate.sinceUs) {
            candidate.reader.track.abandon(sequence: sequence)
            src.reporter.log(
                GST_LEVEL_DEBUG,
                "\(name): trial \(candidate.reader.track.name) group \(sequence) started before the trial: stopped")
        }
    }

    /// Ends a trial's subscription (if any).
    func endTrial() {
        adaptive?.candidate?.remote.cancel()
        adaptive?.candidate = nil
    }

    /// How far back from the last frame shown the candidate's group may start for it to take over
    /// there (its frames up to the last shown are decoded, not shown): a few frames. Older, a later
    /// group boundary is waited for.
    static let takeOverReachUs: UInt64 = 250_000

    /// The current rung read `frame`, next to be shown: whether the trial's rendition takes over
    /// instead. It does when both rungs keep up (the candidate's newest frame is at most a little
    /// behind: the relay sends the lower-priority trial after the current rung), and its group
    /// holding `frame`'s moment has arrived and started at most ``takeOverReachUs`` before the last
    /// frame shown (so its boundaries, arriving just after the current rung's frames were shown,
    /// still count). Then the candidate's reader plays from
    /// that group's start (the playout's rendition reset decodes what was already shown), and
    /// `frame` is not played.
    func trialTakesOver(before frame: MediaFrame, src: MoqSrc) -> TrackReader? {
        guard let state = adaptive, let candidate = state.candidate, let edge = candidate.reader.liveEdgeUs,
            state.abr.trialKeepsUp(nowNs: monotonicNow(), candidateNewestNs: SrcPad.nanoseconds(edge)),
            let group = candidate.reader.groupStart(atOrBefore: frame.timestampUs), group.startUs <= frame.timestampUs,
            group.startUs &+ Self.takeOverReachUs >= lastPushedUs.load(ordering: .relaxed),
            group.startUs > candidate.sinceUs
        else { return nil }
        adaptive?.candidate = nil
        candidate.reader.seek(toTimestampUs: group.startUs, dropEarlier: false)
        candidate.remote.update(policy.range(finite: candidate.source.finite))
        let rung = state.abr.trial?.rung ?? state.abr.current
        take(
            candidate.source, remote: candidate.remote, reader: candidate.reader, rung: rung, src: src,
            reason: "it keeps up")
        return candidate.reader
    }

    /// Switches at once to `rung`, from its current group.
    private func switchRung(to rung: Int, reason: String, src: MoqSrc) {
        guard let state = adaptive, let source else { return }
        let next = source.with(state.abr.ladder.rungs[rung].playable)
        let start = StepDownStart(
            lastShownUs: lastPushedUs.load(ordering: .relaxed), groupDurationUs: reader?.groupDurationUs,
            bitrateBps: state.abr.ladder.rungs[rung].bitrate.map(Double.init), budgetBps: state.abr.videoBudgetBps)
        // Its group in progress started with the one shown (the rungs share boundaries): when it
        // would be left for the next one anyway, the next one is asked for at once (a floor), so
        // that the stale group never takes the path. Else it is fetched, and judged when read.
        var floor: UInt64?
        if let shown = reader?.groupStart(atOrBefore: start.lastShownUs),
            start.waitsForNextGroup(groupStartUs: shown.startUs)
        {
            floor = state.trialStart.floor(for: next.trackName, playing: source.trackName, sequence: shown.sequence)
        }
        let (remote, reader) = subscribe(next, src: src, groupStart: floor)
        take(next, remote: remote, reader: reader, rung: rung, src: src, reason: reason)
        if let floor, let duration = start.groupDurationUs {
            adaptive?.floorWait = FloorWait(
                sequence: floor, deadlineNs: monotonicNow() &+ (min(duration, 2_000_000) + 1_000_000) * 1_000)
            src.reporter.log(GST_LEVEL_INFO, "\(name): \(next.trackName) from its next group, \(floor)")
        } else {
            adaptive?.stepDown = start
        }
    }

    /// A step down that asked for the lower rung's next group has waited a group and a second
    /// without any: its numbering differs (``TrialStart``). The rung is subscribed again from its
    /// group in progress, and floors are not used again.
    private func floorWaitExpired(src: MoqSrc) {
        guard let wait = adaptive?.floorWait, let reader, let source else { return }
        if reader.edge != nil {
            adaptive?.floorWait = nil
            return
        }
        guard monotonicNow() >= wait.deadlineNs else { return }
        adaptive?.floorWait = nil
        adaptive?.trialStart.floorFailed()
        src.reporter.log(
            GST_LEVEL_INFO,
            "\(name): no group \(wait.sequence) of \(source.trackName) came: subscribing from the group in progress")
        let (newRemote, newReader) = subscribe(source, src: src)
        remote?.cancel()
        remote = newRemote
        self.reader = newReader
        readerRef.withLock { $0 = newReader }
        counters.resetArrival()
    }

    /// After a step down, the new rung's first group read: whether it is left for the next one
    /// (``StepDownStart``). Then it is stopped (the relay sends no more of it) and skipped, and
    /// the picture holds until the next group.
    func skipsStaleGroup(_ frame: MediaFrame, reader: TrackReader, src: MoqSrc) -> Bool {
        guard let start = adaptive?.stepDown else { return false }
        adaptive?.stepDown = nil
        guard frame.startsGroup, start.waitsForNextGroup(groupStartUs: frame.timestampUs) else { return false }
        reader.track.abandon(sequence: frame.group)
        reader.skipRestOfGroup()
        src.reporter.log(
            GST_LEVEL_INFO,
            "\(name): \(reader.track.name) group \(frame.group) started \((start.lastShownUs &- frame.timestampUs) / 1000) ms "
                + "before the last frame shown: waiting for the next group")
        return true
    }

    /// `next` plays from here on, on the same timeline.
    private func take(
        _ next: Source, remote newRemote: RemoteTrack, reader newReader: TrackReader, rung: Int, src: MoqSrc,
        reason: String
    ) {
        let previous = source
        remote?.cancel()
        draining?.remote.cancel()
        draining = nil
        held = nil
        remote = newRemote
        reader = newReader
        readerRef.withLock { $0 = newReader }
        source = next
        currentTrack.withLock { $0 = next.trackName }
        counters.resetArrival()
        playout.reset(lane, .rendition)
        adaptive?.abr.switched(to: rung, nowNs: monotonicNow())
        renegotiate(next, src: src)
        let up = (previous?.ladder?.index(of: previous?.trackName ?? "") ?? 0) < rung
        src.reporter.log(
            GST_LEVEL_INFO,
            "\(name): \(previous?.trackName ?? "-") → \(next.trackName) (\(up ? "up" : "down"): \(reason))")
        src.events.post(
            "track.switch", kind: kind, track: next.trackName,
            [
                ("from", .string(previous?.trackName ?? "")), ("direction", .string(up ? "up" : "down")),
                ("reason", .string(reason)), ("automatic", .bool(true)),
            ])
        publishAdaptive()
    }

    /// The stats' view of the adaptive state.
    func publishAdaptive() {
        let snapshot = adaptive.map {
            AdaptiveSnapshot(
                rendition: $0.abr.currentRung.name, estimateBps: $0.abr.estimateBps,
                latenessMs: Double($0.abr.latenessNs) / 1e6, stats: $0.abr.stats)
        }
        adaptiveShared.withLock { $0 = snapshot }
    }

    /// The adaptive state for the stats (nil: no ladder plays here).
    var adaptiveSnapshot: AdaptiveSnapshot? { adaptiveShared.withLock { $0 } }
}

extension SrcPad.Source {
    /// The same source playing another rendition of its ladder.
    func with(_ rendition: PlayableRendition) -> SrcPad.Source {
        var copy = SrcPad.Source(
            session: session, broadcast: broadcast, rendition: rendition, epoch: epoch, eosOnEnd: eosOnEnd)
        copy.finite = finite
        copy.ladder = ladder
        return copy
    }
}

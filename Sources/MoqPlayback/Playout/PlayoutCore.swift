// SPDX-License-Identifier: MIT
public import MoqCatalog

/// Every timing and drop decision of one playback, sans-IO: each frame a pad is about to push
/// goes through ``decide(_:view:now:)``, which answers with what to do (push at this running
/// time, decode without showing, drop, skip the rest of the group, hold a moment), from the
/// frame, what the pad's reader knows about its track (the live edge) and the two clocks. Pads
/// carry the answers to GStreamer; ``Playout`` puts this value behind one lock for them.
///
/// One timeline for every track: running time = timestamp + offset, so the publisher's A/V
/// offset survives. How it is placed:
/// - **Join at the live edge** (live): the first frame waits until the broadcast's live edge is
///   known (``EdgeClock``: the relay's cached burst is over), then the live edge is placed
///   `target` after now and everything before the join point (what would render before now) is
///   decoded but not shown: video from its keyframe on, behind a segment that starts at the join
///   point; audio simply starts there. So latency after a join does not depend on where in the
///   GOP the viewer came in.
/// - **Audio is never bent**: consecutive audio frames of one timeline are pushed back to back;
///   the offset moves only at a discontinuity (flagged, so that audio sinks resync without a
///   warning) or when catch-up drops a whole frame and moves the offset by exactly its duration.
/// - **Late live edge** (the network got slower, a stall): the timeline moves later (an adaptive
///   margin grows; a fixed budget is restored), a late group is skipped when a newer one is here.
/// - **Catch-up** (live, ``PlayoutPolicy/catchUp``): once the path is steady again, the delay a
///   stall added is taken back by dropping whole audio frames at quiet moments (about one in
///   five at most) and compressing video timestamps, until the live edge plays at its target.
/// - **Continuity** after a reconnect: the same publisher's timeline is kept, and late frames of
///   the resubscription's backlog are dropped for ``reconnectGraceNs`` rather than moving it.
/// - **Splice** (a play queue): the next broadcast starts where the last frame pushed ends.
/// - **Long-form**: every frame plays from the first one received; a late one moves the timeline.
public struct PlayoutCore: Sendable {
    /// Where the timeline stands.
    enum Phase: Sendable, Equatable {
        /// No offset yet (or a new one is due): waiting for the first frame and, when live, for
        /// the live edge to settle. Nothing is placed before `floorNs` (what was already pushed).
        case joining(since: UInt64?, floorNs: UInt64)
        /// Placing frames on the offset.
        case playing
        /// After a reconnect: the next frame decides whether the offset still holds.
        case checkingContinuity
        /// The queue's next broadcast (`epoch`) starts where the last frame pushed ends.
        case splicing(epoch: UInt64)
    }

    public let policy: PlayoutPolicy
    var phase = Phase.joining(since: nil, floorNs: 0)
    /// running time = timestamp (ns) + offset; nil before the first anchor.
    var offsetNs: Int64?
    /// The offset of broadcasts before the last splice, for their frames still being pushed.
    var beforeSplice: (epoch: UInt64, offsetNs: Int64)?
    /// Until this running time, late frames are dropped rather than moving the timeline.
    var graceUntilNs: UInt64?
    /// A track received nothing for a while (a stall) and its backlog is arriving: until this
    /// monotonic time, lateness is the stall's, not jitter, and grows no margin.
    var recoveringUntilNs: UInt64?
    /// A gap in a track's arrivals this long is a stall.
    public static let stallGapNs: UInt64 = 250_000_000
    /// How long after a stall the backlog's lateness is not taken for jitter.
    public static let stallRecoveryNs: UInt64 = 1_500_000_000
    var adaptive: AdaptiveLatency?
    var lanes: [Lane?] = []
    var catchUp = CatchUpState()
    /// How long after its running time a buffer is rendered: the pipeline's latency (ns).
    public var renderDelayNs: UInt64 = 0
    /// The latest running time pushed on any lane, and where the frame ends.
    public internal(set) var latestPushedNs: UInt64 = 0
    /// Where the frames pushed last end: the latest of every lane's last frame (a seek's target
    /// at least).
    public var latestEndNs: UInt64 {
        var end = max(latestPushedNs, endFloorNs)
        for lane in lanes {
            if let last = lane?.lastEndNs { end = max(end, Saturating.unsigned(last)) }
        }
        return end
    }
    var endFloorNs: UInt64 = 0
    /// Times the timeline moved later (retargets, underruns) or started again.
    public internal(set) var retargets = 0
    /// The last seek applied (every pad handles the same seek; the first moves the timeline).
    var lastSeekID: UInt64?
    /// The last join: where it clipped (running time) and when (monotonic).
    var lastJoin: (clipNs: UInt64, atNs: UInt64)?
    /// The pipeline is PLAYING with nothing pending: every sink has prerolled and the base time is
    /// final, so a buffer reaching a sink is rendered at its time (before, it waits there for the
    /// slowest branch, a video decoder's plugin loading, and running time starts again from 0).
    var pipelinePlaying = false

    /// The decision's mechanisms, each of which a test can take out (an ablation).
    package struct Tuning: Sendable {
        /// How long a join waits for the live edge to settle at most; 0: the first frame joins on
        /// what has arrived so far.
        package var maxJoinWaitNs = PlayoutCore.maxJoinWaitNs
        /// Frames before the join point are decoded but not shown; false: shown (late).
        package var clipsAtJoin = true
        /// A join waits for the pads' first pushes to return (``maxPrimeWaitNs``); false: it does not.
        package var waitsForFirstPushes = true
        /// Audio's first frame sets up its downstream first (``PlayoutDecision/hold(untilNs:primes:)``);
        /// false: its first push does.
        package var primesAudio = true
        /// Video's first decode-only frame is followed by a GAP that prerolls its sink, and a join
        /// waits for the pipeline to play (``maxPlayingWaitNs``); false: the join places frames on
        /// a running time that the sinks wait through until the last of them prerolls.
        package var waitsForPlaying = true
        /// A join starts audio where its sink can still play it (after the source's own share of the
        /// latency); false: where video's shown frames start, up to the whole render delay earlier.
        package var audioJoinsWithinReach = true

        package init() {}
    }
    package var tuning = Tuning()

    /// How long late frames are dropped after a reconnect before the timeline gives in and moves.
    public static let reconnectGraceNs: UInt64 = 2_000_000_000
    /// How far back new timestamps may start (A/V interleaving, a repeated group) and still count
    /// as the same timeline after a discontinuity.
    public static let continuityToleranceNs: UInt64 = 2_000_000_000
    /// How long a join waits for the live edge to settle at most (a long backlog on a slow path:
    /// catch-up takes the rest).
    public static let maxJoinWaitNs: UInt64 = 250_000_000
    /// How long (from its first frame) a join waits at most for the pads' first pushes to return:
    /// downstream being set up (decodebin plugging a decoder, loading its plugin) took up to 0.4 s
    /// on a loaded machine. A push can also block until the pipeline is PLAYING, which needs the
    /// other pads' sinks to preroll (an encoded track straight into a sink, the other decoded):
    /// that costs the viewer this much of the start, once.
    public static let maxPrimeWaitNs: UInt64 = 500_000_000
    /// How long (from its first frame) a join waits at most for the pipeline to play: its sinks
    /// preroll on the pads' GAPs once every decoder is set up (loading libav for a first viewer:
    /// 0.3 s, once 1.5 s). A sink that needs a real frame to preroll costs its first start this.
    public static let maxPlayingWaitNs: UInt64 = 2_000_000_000
    /// How long video's first frame of a spliced broadcast waits for audio to anchor the splice.
    public static let spliceHoldNs: UInt64 = 500_000_000
    /// The time a frame needs from the pad to its sink: what a join leaves before its first frame.
    public static let joinSlackNs: UInt64 = 20_000_000

    /// A playback with `policy`.
    public init(policy: PlayoutPolicy) {
        self.policy = policy
        if policy.mode == .adaptive { adaptive = AdaptiveLatency(ceilingNs: policy.latencyNs) }
    }

    // MARK: Lanes

    /// A pad of `kind` will decide frames.
    public mutating func register(_ kind: MediaKind) -> LaneID {
        let id = LaneID(index: lanes.count)
        lanes.append(Lane(kind: kind))
        return id
    }

    /// The pad is gone.
    public mutating func unregister(_ id: LaneID) {
        guard lanes.indices.contains(id.index) else { return }
        lanes[id.index] = nil
    }

    /// A lane's source changed.
    public mutating func reset(_ id: LaneID, _ reset: LaneReset) {
        guard lanes.indices.contains(id.index), var lane = lanes[id.index] else { return }
        lane.reset(reset)
        lanes[id.index] = lane
    }

    /// The rest of `group` on a lane is not to be played (a malformed frame).
    public mutating func skipRestOfGroup(_ id: LaneID, group: UInt64) {
        guard lanes.indices.contains(id.index) else { return }
        lanes[id.index]?.skipping = group
        lanes[id.index]?.discontPending = true
    }

    // MARK: Events from the element

    /// A reconnect or a new broadcast of the same publisher: the next frame decides whether the
    /// offset still holds.
    public mutating func markDiscontinuity() {
        if offsetNs != nil, phase == .playing { phase = .checkingContinuity }
    }

    /// The running time stood still (a pause) or another publisher's clock follows (another
    /// broadcast, `newClock`): the next frame joins again, after what was already pushed.
    public mutating func rejoin(newClock: Bool) {
        guard offsetNs != nil else { return }
        if newClock { resetClocks() }
        phase = .joining(since: nil, floorNs: max(latestEndNs, Saturating.add(latestPushedNs, 1_000_000)))
    }

    /// The next broadcast of a queue (source `epoch`) follows the current one without a gap.
    /// The first pad to switch splices; a second call for the same epoch does nothing. Returns
    /// whether this call spliced.
    @discardableResult
    public mutating func splice(epoch: UInt64) -> Bool {
        if case .splicing(let current) = phase, epoch <= current { return false }
        if let previous = beforeSplice, epoch <= previous.epoch { return false }
        guard let offset = offsetNs else {
            beforeSplice = (epoch, 0)
            return true
        }
        beforeSplice = (epoch, offset)
        phase = .splicing(epoch: epoch)
        return true
    }

    /// Whether the queue's next broadcast `epoch` still waits for its first frame to be placed.
    public func awaitsSplice(epoch: UInt64) -> Bool { phase == .splicing(epoch: epoch) }

    /// A seek within the buffer: `timestampUs` plays at `runningNs`, and what was pushed before no
    /// longer counts (the pads flushed it). A second call with the same `id` does nothing.
    @discardableResult
    public mutating func seek(id: UInt64, timestampUs: UInt64, at runningNs: UInt64) -> Bool {
        guard lastSeekID != id else { return false }
        lastSeekID = id
        graceUntilNs = nil
        phase = .playing
        anchor(timestampNs: Saturating.nanosecondsUnsigned(micros: timestampUs), at: runningNs)
        latestPushedNs = runningNs
        endFloorNs = runningNs
        return true
    }

    /// A new ceiling for the adaptive margin (`latency` changed while playing).
    public mutating func setAdaptiveCeiling(ns: UInt64) { adaptive?.ceilingNs = ns }

    /// Samples a lane's live edge while no frame is decided (a pad waiting for data).
    public mutating func observe(_ id: LaneID, edge: EdgeSample?, now: PlayoutNow) {
        observeEdge(id, edge, now: now)
    }

    // MARK: Reading

    /// The running time of a timestamp on the timeline (nil before the first anchor).
    public func runningTime(ofUs timestampUs: UInt64, epoch: UInt64? = nil) -> UInt64? {
        guard let offset = offset(for: epoch) else { return nil }
        return Saturating.unsigned(Saturating.add(Saturating.nanoseconds(micros: timestampUs), offset))
    }

    /// The jitter margin in the offset (ns): 0 with a fixed budget.
    public var marginNs: UInt64 { adaptive?.marginNs ?? 0 }

    /// The offset for frames of `epoch` (the previous one for a broadcast played before a splice).
    func offset(for epoch: UInt64?) -> Int64? {
        if let epoch, let previous = beforeSplice, epoch < previous.epoch { return previous.offsetNs }
        return offsetNs
    }

    /// The live edge now as every track that knows it agrees (ns, the publisher's clock minus the
    /// monotonic clock): the smallest of the tracks' estimates, so that the track whose frames
    /// arrive last (audio waits for a whole frame before it leaves the encoder) is on time too.
    /// Tracks still receiving a backlog do not count while another track has settled.
    func combinedLead(now: UInt64) -> Int64? {
        var settled: Int64?
        var any: Int64?
        for lane in lanes {
            guard let lane, let lead = lane.clock.lead(now: now) else { continue }
            any = min(any ?? lead, lead)
            if lane.clock.settled { settled = min(settled ?? lead, lead) }
        }
        return settled ?? any
    }

    /// Whether a pad's first push of the join (what sets up its downstream) has not returned yet.
    var isPriming: Bool { lanes.contains { $0?.priming == true } }

    /// A push whose ``PlayoutPush/primes`` was set has returned: that pad's downstream is ready.
    public mutating func pushReturned(_ id: LaneID) {
        guard lanes.indices.contains(id.index) else { return }
        lanes[id.index]?.priming = false
    }

    /// The pipeline plays: every sink prerolled and the base time is final.
    public mutating func pipelineIsPlaying() { pipelinePlaying = true }

    /// Whether every track knows where its live edge is: a track that has received nothing yet is
    /// waited for too (audio, whose frames leave the encoder last, often decides the timeline), up
    /// to the join's deadline.
    var clocksSettled: Bool {
        var any = false
        for lane in lanes {
            guard let lane else { continue }
            if lane.clock.samples == 0 || !lane.clock.settled { return false }
            any = true
        }
        return any
    }

    /// Another publisher's clock follows: what the tracks knew of the live edge no longer holds.
    mutating func resetClocks() {
        for index in lanes.indices {
            lanes[index]?.clock.reset()
            lanes[index]?.lastEdge = nil
        }
    }

    mutating func anchor(timestampNs: UInt64, at runningNs: UInt64) {
        if offsetNs != nil { retargets += 1 }
        adaptive?.forgetLateness()
        offsetNs = Saturating.subtract(Saturating.int64(runningNs), Saturating.int64(timestampNs))
    }
}

// SPDX-License-Identifier: MIT

/// Identifies one pad's frames to the playout (``PlayoutCore/register(_:)``).
public struct LaneID: Sendable, Hashable, CustomStringConvertible {
    let index: Int
    public var description: String { "lane \(index)" }
}

/// A frame about to be played, as the playout needs to know it.
public struct PlayoutFrame: Sendable, Equatable {
    public var lane: LaneID
    /// The source epoch (a new one after a reconnect that lost the session, or another broadcast).
    public var epoch: UInt64
    public var group: UInt64
    /// The frame's index in its group: 0 starts a group (a keyframe for video).
    public var index: Int
    /// The publisher's timestamp (µs).
    public var timestampUs: UInt64
    /// The codec bytes' size: among audio frames, the smaller ones are the quieter (catch-up drops those).
    public var payloadBytes: Int
    /// When it arrived (monotonic ns), if the reader could tell: lateness is the network's, not
    /// the pad's while it works through a backlog.
    public var arrivalNs: UInt64?

    public init(
        lane: LaneID, epoch: UInt64, group: UInt64, index: Int, timestampUs: UInt64, payloadBytes: Int,
        arrivalNs: UInt64? = nil
    ) {
        self.lane = lane
        self.epoch = epoch
        self.group = group
        self.index = index
        self.timestampUs = timestampUs
        self.payloadBytes = payloadBytes
        self.arrivalNs = arrivalNs
    }

    public var startsGroup: Bool { index == 0 }
    var timestampNs: UInt64 { Saturating.nanosecondsUnsigned(micros: timestampUs) }
}

/// The newest frame received on a track: the live edge as that track knows it.
public struct EdgeSample: Sendable, Equatable {
    /// Its publisher timestamp (µs).
    public var timestampUs: UInt64
    /// When it arrived (monotonic ns, the track's clock).
    public var arrivalNs: UInt64
    /// Which frame it is (group sequence, frames in that group): a new frame has a new identity.
    public var group: UInt64
    public var count: Int

    public init(timestampUs: UInt64, arrivalNs: UInt64, group: UInt64, count: Int) {
        self.timestampUs = timestampUs
        self.arrivalNs = arrivalNs
        self.group = group
        self.count = count
    }
}

/// What a lane's reader knows when a frame is decided.
public struct LaneView: Sendable, Equatable {
    /// The newest frame received on the track.
    public var edge: EdgeSample?
    /// A group newer than the frame's has arrived (late groups are skipped only then).
    public var hasNewerGroup: Bool

    public init(edge: EdgeSample?, hasNewerGroup: Bool) {
        self.edge = edge
        self.hasNewerGroup = hasNewerGroup
    }
}

/// The two clocks of a decision.
public struct PlayoutNow: Sendable, Equatable {
    /// The pipeline's running time (ns): what buffer timestamps are compared with.
    public var runningNs: UInt64
    /// The monotonic clock arrivals are stamped with (ns).
    public var monotonicNs: UInt64

    public init(runningNs: UInt64, monotonicNs: UInt64) {
        self.runningNs = runningNs
        self.monotonicNs = monotonicNs
    }
}

/// What to do with a frame.
public enum PlayoutDecision: Sendable, Equatable {
    /// Push it as a buffer.
    case push(PlayoutPush)
    /// Drop this frame.
    case drop(PlayoutDrop)
    /// Drop this frame and the rest of its group (the reader skips to the next group).
    case skipGroup(PlayoutDrop)
    /// Keep the frame and ask again at (or before, when something arrives) this monotonic time.
    /// `primes`: meanwhile set up what is downstream without a sound (the frame decode-only before
    /// running time 0, on which parsers and the decoder negotiate and decodebin plugs it, then a
    /// GAP at running time 0 on which the sink prerolls), then call ``Playout/pushReturned(_:)``;
    /// the join waits for that as for a priming push (``PlayoutPush/primes``).
    case hold(untilNs: UInt64, primes: Bool = false)
}

/// How to push a frame.
public struct PlayoutPush: Sendable, Equatable {
    /// The buffer's running time: where it is rendered (plus the pipeline's latency). Negative for
    /// a decode-only frame from before running time 0 (a join soon after the pipeline started).
    public var pts: Int64
    /// The buffer starts a discontinuity (a join, a jump of the timeline, a skipped group).
    public var discont: Bool
    /// Decode but do not show: a frame before the join point that later frames need.
    public var decodeOnly: Bool
    /// A segment starting at this running time precedes the buffer: what comes before it is
    /// decoded and dropped downstream (a join at the live edge).
    public var segmentStartNs: Int64?
    /// What happened to the timeline on the way.
    public var note: PlayoutNote?
    /// The render delay the decision used (the pipeline's latency), for the pad's statistics.
    public var renderDelayNs: UInt64 = 0
    /// A join waits until this push has returned (the pad calls ``Playout/pushReturned(_:)``):
    /// the first buffer a pad pushes sets up what is downstream (a decoder plugged, its plugin
    /// loaded), which can take hundreds of milliseconds that no frame may be placed across.
    public var primes = false
    /// After this (decode-only) buffer, a GAP at running time 0: its sink prerolls without showing
    /// a frame, so the pipeline can play before the join places its first frame.
    public var prerolls = false

    public init(
        pts: Int64, discont: Bool = false, decodeOnly: Bool = false, segmentStartNs: Int64? = nil,
        note: PlayoutNote? = nil
    ) {
        self.pts = pts
        self.discont = discont
        self.decodeOnly = decodeOnly
        self.segmentStartNs = segmentStartNs
        self.note = note
    }
}

/// A change of the timeline a push brings, for events and counters.
public enum PlayoutNote: Sendable, Equatable {
    /// Live playback joined: what arrived before `clipNs` (running time) is not shown; the live
    /// edge plays `targetNs` after it arrives.
    case joined(clipNs: Int64)
    /// Another timeline started (a restarted publisher, another broadcast, a resume after pause).
    case anchored
    /// The live edge was late: the timeline moved `ns` later (an underrun in long-form).
    case retargeted(ns: UInt64)
    /// The next broadcast of a queue starts where the previous one ended.
    case spliced
}

/// Why a frame was not pushed.
public enum PlayoutDrop: String, Sendable, Equatable {
    /// Before the join point (audio: every frame decodes alone).
    case beforeJoin = "before-join"
    /// Too late to be shown, and a newer group is here.
    case late
    /// Already pushed before a resubscription.
    case repeated
    /// The rest of a group whose start was dropped (it cannot decode).
    case restOfGroup = "rest-of-group"
    /// Catching up with the live edge after a stall (a whole audio frame at a quiet moment).
    case catchUp = "catch-up"
}

/// A lane's source changed (see ``PlayoutCore/reset(_:_:)``).
public enum LaneReset: Sendable, Equatable {
    /// Another subscription of the same track or another track; `newEpoch`: the timeline may
    /// have changed (a reconnect that lost the session): whether the last position still applies
    /// is decided at the new source's first group. `discont`: its first push is a discontinuity
    /// (not when long-form plays the new subscription right after what the old one buffered).
    case newSource(newEpoch: Bool, discont: Bool)
    /// The queue's next broadcast: nothing of the previous position applies.
    case splice
    /// A seek: reading restarts at the target.
    case seek
    /// Another rendition of the same picture (adaptive bitrate), on the same timeline: its frames
    /// up to the last one pushed are decoded but not shown (the rest of their group needs them),
    /// the first after it plays on.
    case rendition
}

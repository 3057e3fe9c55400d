// SPDX-License-Identifier: MIT
import MoqSync

/// Playback statistics of one track, with moq-kit's `PlaybackStats` meanings: frames
/// and bytes over a sliding one-second window (fps, bitrate), stalls, time to first
/// frame, latency and buffer depth, drops. Written by the pad's thread, read by anyone.
public final class PlaybackCounters: Sendable {
    /// A point-in-time copy.
    public struct Snapshot: Sendable, Equatable {
        /// Frames pushed in total.
        public var frames: UInt64 = 0
        /// Codec bytes pushed in total.
        public var bytes: UInt64 = 0
        /// Frames per second over the last second.
        public var fps: Double = 0
        /// Bitrate over the last second, kbit/s.
        public var bitrateKbps: Double = 0
        /// Frames dropped (late groups, malformed frames, duplicates after a reconnect).
        public var framesDropped: UInt64 = 0
        /// Groups skipped by the latency budget before reaching the pad.
        public var groupsSkipped: UInt64 = 0
        /// Stalls (no frame for ``PlaybackCounters/stallThresholdNs``) and their total duration.
        public var stalls: UInt64 = 0
        /// Total stall time, ms (an ongoing stall included).
        public var stallDurationMs: Double = 0
        /// True while stalled.
        public var stalled = false
        /// From start to the first frame pushed, ms; nil before it.
        public var timeToFirstFrameMs: Double?
        /// Playout delay, ms, averaged over the last second: how long until the newest received
        /// frame is rendered (about the `latency` setting when healthy; ≤ 0 means frames arrive too late).
        public var latencyMs: Double = 0
        /// How far the newest received frame is ahead of the last pushed one, ms.
        public var bufferMs: Double = 0
        /// Media received per second of wall time (the live edge's advance), over about a second.
        public var fillRate: Double = 0
        /// Frames pushed after their render deadline.
        public var underruns: UInt64 = 0
    }

    /// A track is stalled when no frame arrived for this long (moq-kit: 1 s arrival gap).
    public static let stallThresholdNs: UInt64 = 1_000_000_000

    private struct State {
        var snapshot = Snapshot()
        var window: [(at: UInt64, bytes: Int, slackNs: Int64?)] = []
        var stallStart: UInt64?
        var lastFrameAt: UInt64?
        /// The live edge (µs) and when it was seen (ns), at the start of the fill-rate window.
        var fillMark: (edgeUs: UInt64, at: UInt64)?
    }

    private let state = Lock(State())
    /// When playback was requested (ns, monotonic), for time to first frame.
    public let startedAt: UInt64

    /// - Parameter startedAt: the monotonic time playback was requested.
    public init(startedAt: UInt64) {
        self.startedAt = startedAt
    }

    /// A frame was pushed at `now`; `slackNs` is the newest received frame's render deadline minus `now`,
    /// nil for a frame that is decoded but not shown (before the join point: its deadline is not
    /// playback's, and counting it made the first second's latency minutes negative).
    /// - Returns: the duration of the stall it ends, if it ends one (ns).
    @discardableResult
    public func framePushed(
        bytes: Int, now: UInt64, liveEdgeUs: UInt64? = nil, slackNs: Int64?, bufferNs: UInt64
    ) -> UInt64? {
        state.withLock { s in
            if let liveEdgeUs { Self.noteLiveEdge(&s, liveEdgeUs, now: now) }
            var ended: UInt64?
            if let start = s.stallStart {
                ended = now &- start
                s.snapshot.stallDurationMs += Double(now &- start) / 1e6
                s.stallStart = nil
                s.snapshot.stalled = false
            }
            s.snapshot.frames += 1
            s.snapshot.bytes += UInt64(bytes)
            if s.snapshot.timeToFirstFrameMs == nil {
                s.snapshot.timeToFirstFrameMs = Double(now &- startedAt) / 1e6
            }
            s.lastFrameAt = now
            s.window.append((now, bytes, slackNs))
            s.snapshot.bufferMs = Double(bufferNs) / 1e6
            trim(&s, now: now)
            return ended
        }
    }

    /// Checks for a stall at `now` (call while waiting for data).
    /// - Returns: true when a stall starts now.
    public func checkStall(now: UInt64) -> Bool {
        state.withLock { s in
            guard s.stallStart == nil, let last = s.lastFrameAt, now &- last >= Self.stallThresholdNs else {
                return false
            }
            s.stallStart = last
            s.snapshot.stalls += 1
            s.snapshot.stalled = true
            return true
        }
    }

    /// The newest received timestamp at `now`: the fill rate is its advance per second of wall time.
    public func liveEdge(_ edgeUs: UInt64, now: UInt64) {
        state.withLock { Self.noteLiveEdge(&$0, edgeUs, now: now) }
    }

    private static func noteLiveEdge(_ s: inout State, _ edgeUs: UInt64, now: UInt64) {
        guard let mark = s.fillMark else {
            s.fillMark = (edgeUs, now)
            return
        }
        let elapsed = now &- mark.at
        guard elapsed >= 1_000_000_000 else { return }
        let advanced = edgeUs > mark.edgeUs ? edgeUs - mark.edgeUs : 0
        s.snapshot.fillRate = Double(advanced) * 1000 / Double(elapsed)
        s.fillMark = (edgeUs, now)
    }

    /// A frame reached the pad after its render deadline.
    public func underrun() {
        state.withLock { $0.snapshot.underruns += 1 }
    }

    /// Frames dropped before reaching the pad.
    public func dropped(_ count: UInt64 = 1) {
        state.withLock { $0.snapshot.framesDropped += count }
    }

    /// Sets the reader's skipped-group count; returns the one it replaces.
    @discardableResult
    public func setGroupsSkipped(_ count: UInt64) -> UInt64 {
        state.withLock { s in
            defer { s.snapshot.groupsSkipped = count }
            return s.snapshot.groupsSkipped
        }
    }

    /// Forgets that a frame was seen (a new subscription starts: no stall until it delivers).
    public func resetArrival() {
        state.withLock { s in
            if let start = s.stallStart, let last = s.lastFrameAt {
                s.snapshot.stallDurationMs += Double(last &- start) / 1e6
            }
            s.stallStart = nil
            s.snapshot.stalled = false
            s.lastFrameAt = nil
            s.fillMark = nil
        }
    }

    /// The statistics at `now`.
    public func snapshot(now: UInt64) -> Snapshot {
        state.withLock { s in
            trim(&s, now: now)
            var snap = s.snapshot
            let seconds = 1.0
            snap.fps = Double(s.window.count) / seconds
            snap.bitrateKbps = Double(s.window.reduce(0) { $0 + $1.bytes }) * 8 / 1000 / seconds
            let slacks = s.window.compactMap(\.slackNs)
            if !slacks.isEmpty {
                snap.latencyMs = Double(slacks.reduce(Int64(0)) { $0 &+ $1 }) / Double(slacks.count) / 1e6
            }
            if let start = s.stallStart { snap.stallDurationMs += Double(now &- start) / 1e6 }
            return snap
        }
    }

    private func trim(_ s: inout State, now: UInt64) {
        let horizon = now > 1_000_000_000 ? now - 1_000_000_000 : 0
        if let first = s.window.firstIndex(where: { $0.at >= horizon }) {
            if first > 0 { s.window.removeFirst(first) }
        } else {
            s.window.removeAll(keepingCapacity: true)
        }
    }
}

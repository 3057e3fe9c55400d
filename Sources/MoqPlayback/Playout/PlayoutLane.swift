// SPDX-License-Identifier: MIT
import MoqCatalog

extension PlayoutCore {
    /// A frame's place in its track.
    struct Position: Sendable, Equatable {
        var group: UInt64
        var index: Int
        var timestampUs: UInt64

        /// Whether `frame` comes at or before this position in the track.
        func covers(_ frame: PlayoutFrame) -> Bool {
            frame.group < group || (frame.group == group && frame.index <= index)
        }
    }

    /// One pad's side of the playout: what it pushed, what it skips, what it still owes GStreamer.
    struct Lane: Sendable {
        let kind: MediaKind
        /// The last frame pushed: frames at or before it are repeats of a resubscription.
        var lastPosition: Position?
        /// A new source epoch began: whether ``lastPosition`` still applies is known at its
        /// first group (the same publisher repeating itself after a GOAWAY handover, or another
        /// timeline whose groups count from 0 again).
        var checkPositionAtFirstGroup = false
        /// The group whose rest is skipped (its start was dropped or malformed).
        var skipping: UInt64?
        /// The next push carries DISCONT.
        var discontPending = true
        /// A segment starting here precedes the next push (a join's clip point).
        var pendingSegmentNs: Int64?
        /// Frames placed before this running time are before the join point.
        var clipNs: Int64?
        /// The last PTS pushed, where that frame ends, its timestamp (ns) and epoch.
        var lastPts: Int64?
        var lastEndNs: Int64?
        var lastTimestampNs: UInt64?
        var lastEpoch: UInt64?
        /// The spacing of this track's frames (ns), from consecutive timestamps.
        var frameDurationNs: UInt64?
        /// When this lane last pushed (monotonic ns).
        var lastPushAtNs: UInt64?
        /// The edge sample last fed to the clock (each frame feeds it once), and the clock: where
        /// this track's live edge is.
        var lastEdge: EdgeSample?
        var clock = EdgeClock()
        /// Long-form, joining: this track's first frame (ns), to start the timeline at the earliest.
        var firstTimestampNs: UInt64?
        /// A join's first push to this pad (``PlayoutPush/primes``) has not returned yet.
        var priming = false
        /// The pad was asked to set up its downstream before its first push (once per pad).
        var primedBeforeFirstPush = false
        /// After a switch to another rendition (``LaneReset/rendition``): the timestamp (ns) of the
        /// last frame pushed from the previous one; the new one's frames up to it are decode-only.
        var switchFloorNs: UInt64?
        /// Video's first frame of a spliced broadcast has waited for audio since then (monotonic ns).
        var spliceHoldSince: UInt64?
        /// Catch-up: the payload sizes of the last frames, frames pushed since the last drop, and
        /// the timestamp (ns) of a frame dropped whose duration the next frame tells.
        var recentSizes: [Int] = []
        var framesSinceDrop = Int.max / 2
        var droppedTimestampNs: UInt64?

        init(kind: MediaKind) { self.kind = kind }

        mutating func reset(_ reset: LaneReset) {
            switch reset {
            case .newSource(let newEpoch, let discont):
                if newEpoch { checkPositionAtFirstGroup = lastPosition != nil }
                skipping = nil
                if discont { discontPending = true }
            case .rendition:
                // Group sequences are per track: positions of the old one say nothing here.
                switchFloorNs = lastTimestampNs
                // And a segment that starts after the last frame shown: a decoder that shows a
                // decode-only frame anyway (or a parser that loses the flag) still clips them.
                // (Where the last one shown ends: a frame at its time overlaps it otherwise.)
                if let last = lastPts { pendingSegmentNs = max(lastEndNs ?? last, Saturating.add(last, 1)) }
                lastPosition = nil
                checkPositionAtFirstGroup = false
                skipping = nil
                discontPending = true
            case .splice, .seek:
                switchFloorNs = nil
                lastPosition = nil
                checkPositionAtFirstGroup = false
                skipping = nil
                discontPending = true
                spliceHoldSince = nil
                droppedTimestampNs = nil
                if reset == .seek {
                    lastPts = nil
                    lastEndNs = nil
                }
            }
        }

        /// Long-form: a resubscription asks for the whole deep budget; what it repeats is dropped
        /// before it can count as where the timeline is (before the new-epoch check).
        func isLongFormRepeat(_ frame: PlayoutFrame) -> Bool {
            guard let last = lastPosition else { return false }
            return frame.timestampUs <= last.timestampUs && last.covers(frame)
        }

        /// Repeats and the rest of skipped groups (the new-epoch check comes first).
        func filtered(_ frame: PlayoutFrame) -> PlayoutDrop? {
            if let last = lastPosition, last.covers(frame) { return .repeated }
            if !frame.startsGroup, skipping == frame.group { return .restOfGroup }
            return nil
        }

        /// The smallest of the recent payload sizes (catch-up drops frames no larger).
        var quietSize: Int { recentSizes.min() ?? 0 }

        /// Records a push.
        mutating func pushed(_ frame: PlayoutFrame, pts: Int64, now: UInt64) {
            let ts = frame.timestampNs
            // The spacing of consecutive frames; a gap (frames missing, or a join's skip) is not
            // taken for a longer frame once the spacing is known.
            if let previous = lastTimestampNs, lastEpoch == frame.epoch, ts > previous, ts - previous <= 1_000_000_000,
                frameDurationNs.map({ ts - previous <= 2 * $0 }) ?? true
            {
                frameDurationNs = ts - previous
            }
            lastPosition = Position(group: frame.group, index: frame.index, timestampUs: frame.timestampUs)
            lastPts = pts
            lastEndNs = Saturating.add(pts, Saturating.int64(frameDurationNs ?? 0))
            lastTimestampNs = ts
            lastEpoch = frame.epoch
            lastPushAtNs = now
            if kind == .audio {
                if recentSizes.count >= 8 { recentSizes.removeFirst() }
                recentSizes.append(frame.payloadBytes)
            }
            if framesSinceDrop < Int.max / 2 { framesSinceDrop += 1 }
            if frame.startsGroup || frame.group != skipping { skipping = nil }
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import Testing

/// Adaptive bitrate's splice: another rendition of the same picture takes over on the same
/// timeline, without a gap, a repeat or a flash of an older frame.
@Suite("Playout: a rendition switch on one timeline")
struct PlayoutRenditionSwitchTests {
    static let ms = PlayoutTimelineTests.ms
    typealias Bench = PlayoutTimelineTests.Bench

    /// Joined, then video frames 0…10 of group 1 (30 fps from 2.0 s) pushed.
    static func playing() -> (Bench, lastPts: Int64) {
        var b = Bench()
        _ = b.join(us: 2_000_000, atMs: 1_000)
        var last: Int64 = 0
        for i in 0...10 {
            if case .push(let push) = b.decide(
                b.video, group: 1, index: i, us: 2_000_000 + UInt64(i) * 33_000, atMs: 1_000 + UInt64(i) * 33)
            {
                last = push.pts
            }
        }
        return (b, last)
    }

    @Test("mid-group: the new rendition's frames up to the last one shown are decode-only, then it plays on")
    func midGroup() {
        var (b, lastPts) = Self.playing()
        b.core.reset(b.video, .rendition)
        // The new track's current group started at the same keyframe; its sequence is its own.
        var pushes: [PlayoutPush] = []
        for i in 0...11 {
            guard
                case .push(let push) = b.decide(
                    b.video, group: 7, index: i, us: 2_000_000 + UInt64(i) * 33_000, atMs: 1_335 + UInt64(i))
            else {
                Issue.record("frame \(i) not pushed")
                return
            }
            pushes.append(push)
        }
        let hidden = pushes[0...10].allSatisfy(\.decodeOnly)
        #expect(hidden, "what was already shown is not shown again")
        #expect(pushes[0].discont)
        #expect(
            pushes[0].segmentStartNs == lastPts + 33 * Int64(Self.ms),
            "a segment from where the last one shown ends clips them too (a decoder may show them anyway)")
        #expect(!pushes[11].decodeOnly, "the first new frame is shown")
        #expect(pushes[11].pts == lastPts + 33 * Int64(Self.ms), "right after the last one shown: no gap")
        // Each ends before the segment starts (a frame ending exactly there is shown by decoders).
        let before = pushes[0...10].allSatisfy { $0.pts + 33 * Int64(Self.ms) < pushes[0].segmentStartNs! }
        #expect(before, "\(pushes.map(\.pts)) vs \(lastPts)")
    }

    @Test("the timeline moved later since (audio was late): what was already shown stays before the segment")
    func afterRetarget() {
        var (b, lastPts) = Self.playing()
        b.core.reset(b.video, .rendition)
        // Audio arrives 300 ms late: the whole timeline moves later.
        _ = b.decide(b.audio, group: 90, us: 2_340_000, atMs: 1_700)
        #expect(b.core.retargets > 0)
        var pushes: [PlayoutPush] = []
        for i in 0...10 {
            if case .push(let push) = b.decide(
                b.video, group: 7, index: i, us: 2_000_000 + UInt64(i) * 33_000, atMs: 1_700 + UInt64(i))
            {
                pushes.append(push)
            }
        }
        #expect(pushes.count == 11)
        let clipped = pushes.allSatisfy { $0.decodeOnly && $0.pts + 33 * Int64(Self.ms) <= lastPts }
        #expect(clipped, "\(pushes.map(\.pts)) vs \(lastPts)")
    }

    @Test("without the reset, the new track's group would be shown from its keyframe (an older frame)")
    func ablation() {
        var (b, lastPts) = Self.playing()
        b.core.reset(b.video, .newSource(newEpoch: false, discont: true))
        guard case .push(let push) = b.decide(b.video, group: 7, index: 0, us: 2_000_000, atMs: 1_335) else {
            Issue.record("not pushed")
            return
        }
        // Shown: either as an older frame, or (late for its place) by moving the whole timeline.
        #expect(!push.decodeOnly)
        #expect(push.pts < lastPts || b.core.retargets > 0, "\(push)")
    }

    @Test("at a group boundary after the last frame shown: the new rendition plays at once")
    func atBoundary() {
        var (b, lastPts) = Self.playing()
        b.core.reset(b.video, .rendition)
        guard case .push(let push) = b.decide(b.video, group: 8, index: 0, us: 2_363_000, atMs: 1_335) else {
            Issue.record("not pushed")
            return
        }
        #expect(!push.decodeOnly && push.discont)
        #expect(push.pts == lastPts + 33 * Int64(Self.ms))
        #expect(push.segmentStartNs == lastPts + 33 * Int64(Self.ms))
    }
}

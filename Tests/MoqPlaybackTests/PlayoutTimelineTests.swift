// SPDX-License-Identifier: MIT
import MoqPlayback
import Testing

@Suite("PlayoutTimeline: one offset per broadcast, forward-only retargets")
struct PlayoutTimelineTests {
    let ms: UInt64 = 1_000_000
    let latency: UInt64 = 100_000_000

    @Test("the first frame anchors the live edge at now; older frames of the group land in the past")
    func anchorsAtLiveEdge() {
        var t = PlayoutTimeline()
        // Joined mid-GOP: the keyframe is 500 ms older than the newest frame received.
        let (pts, placement) = t.place(
            timestampUs: 1_000_000, liveEdgeUs: 1_500_000, now: 10_000 * ms, latencyNs: latency)
        #expect(placement == .anchored)
        #expect(pts == 9_500 * ms)
        #expect(t.runningTime(of: 1_500_000) == 10_000 * ms)
    }

    @Test("every track shares the offset, so the publisher's A/V offset survives")
    func sharedOffset() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 2_000_000, liveEdgeUs: 2_000_000, now: 50 * ms, latencyNs: latency)
        // Audio recorded 400 ms after that video frame stays 400 ms after it.
        #expect(t.runningTime(of: 2_400_000) - t.runningTime(of: 2_000_000) == 400 * ms)
    }

    @Test("a live edge arriving after its render deadline moves the timeline forward (never back)")
    func retargetsForward() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: latency)
        // On time: 1 s of media after 1 s.
        let onTime = t.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_050 * ms, latencyNs: latency)
        #expect(onTime.placement == .continued && onTime.pts == 2_000 * ms)
        // The link stalled: that same media time arrives 700 ms later than the anchor expects.
        let late = t.place(timestampUs: 2_000_000, liveEdgeUs: 2_000_000, now: 3_700 * ms, latencyNs: latency)
        #expect(late.placement == .retargeted(ns: 700 * ms))
        #expect(late.pts == 3_700 * ms)
        #expect(t.retargets == 1)
        // Frames that arrive earlier than expected never move it back.
        let early = t.place(timestampUs: 3_000_000, liveEdgeUs: 3_000_000, now: 4_000 * ms, latencyNs: latency)
        #expect(early.placement == .continued && early.pts == 4_700 * ms)
    }

    @Test("after a reconnect, the same publisher's timestamps continue the timeline")
    func continuityKept() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: latency)
        t.pushed(1_900 * ms)
        t.markDiscontinuity()
        let next = t.place(timestampUs: 3_000_000, liveEdgeUs: 3_000_000, now: 3_950 * ms, latencyNs: latency)
        #expect(next.placement == .continued)
        #expect(next.pts == 4_000 * ms)
    }

    @Test("after a reconnect on the same timeline, late backlog frames do not move it for 2 s")
    func lateGraceAfterReconnect() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: latency)
        t.pushed(1_000 * ms)
        t.markDiscontinuity()
        // 30 s later the first frame to arrive is one captured 25 s ago (the relay's backlog).
        let now = 31_000 * ms
        let old = t.place(timestampUs: 5_000_000, liveEdgeUs: 5_000_000, now: now, latencyNs: latency)
        #expect(old.placement == .continued && old.pts == 6_000 * ms, "late, to be dropped")
        #expect(t.isInLateGrace(now: now))
        let later = t.place(timestampUs: 6_000_000, liveEdgeUs: 6_000_000, now: now + 20 * ms, latencyNs: latency)
        #expect(later.placement == .continued && t.retargets == 0)
        // The live edge arrives on time: it plays where it belongs, with no latency added.
        let live = t.place(timestampUs: 30_000_000, liveEdgeUs: 30_000_000, now: now + 50 * ms, latencyNs: latency)
        #expect(live.placement == .continued && live.pts == 31_000 * ms)
        // Once the grace is over, a live edge that is still late moves the timeline as before.
        #expect(!t.isInLateGrace(now: now + 2_000 * ms))
        let lateEdge = t.place(
            timestampUs: 30_000_000, liveEdgeUs: 30_000_000, now: now + 3_000 * ms, latencyNs: latency)
        if case .retargeted = lateEdge.placement {} else { Issue.record("\(lateEdge.placement)") }
    }

    @Test("a restarted publisher (timestamps back to 0) starts a new timeline after what was pushed")
    func restartedPublisher() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 50_000_000, liveEdgeUs: 50_000_000, now: 1_000 * ms, latencyNs: latency)
        t.pushed(5_000 * ms)
        t.markDiscontinuity()
        let next = t.place(timestampUs: 0, liveEdgeUs: 0, now: 4_000 * ms, latencyNs: latency)
        #expect(next.placement == .anchored)
        #expect(next.pts == 5_001 * ms, "monotonic: after the last pushed buffer")
    }

    @Test("a publisher clock jumping far ahead also re-anchors")
    func jumpAhead() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: latency)
        t.pushed(1_000 * ms)
        t.markDiscontinuity()
        let next = t.place(timestampUs: 3_600_000_000, liveEdgeUs: 3_600_000_000, now: 2_000 * ms, latencyNs: latency)
        #expect(next.placement == .anchored && next.pts == 2_000 * ms)
    }

    @Test("resuming after a pause anchors again after what was pushed")
    func resume() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: latency)
        t.pushed(3_000 * ms)
        t.reanchorOnNextFrame()
        // 10 s of broadcast went by while the running time stood still.
        let next = t.place(timestampUs: 12_000_000, liveEdgeUs: 12_000_000, now: 3_010 * ms, latencyNs: latency)
        #expect(next.placement == .anchored && next.pts == 3_010 * ms)
    }

    @Test("timestamps before the anchor clamp at zero running time")
    func clampsAtZero() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 10_000_000, liveEdgeUs: 10_000_000, now: 100 * ms, latencyNs: latency)
        #expect(t.runningTime(of: 0) == 0)
    }

    @Test("a seek puts its target at the given running time once per id; later frames continue from it")
    func seek() {
        var t = PlayoutTimeline(longForm: true)
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 100 * ms, latencyNs: latency)
        t.pushed(900 * ms)
        // Back 0.5 s of publisher time, rendered at running time 2 s.
        let moved = t.seek(id: 7, timestampUs: 300_000, at: 2_000 * ms)
        #expect(moved)
        #expect(t.runningTime(of: 300_000) == 2_000 * ms)
        #expect(t.latestPushedNs == 2_000 * ms)
        // The second pad handling the same seek changes nothing.
        let again = t.seek(id: 7, timestampUs: 300_000, at: 2_500 * ms)
        #expect(!again)
        #expect(t.runningTime(of: 300_000) == 2_000 * ms)
        let (pts, placement) = t.place(timestampUs: 320_000, liveEdgeUs: 320_000, now: 1_990 * ms, latencyNs: latency)
        #expect(placement == .continued && pts == 2_020 * ms)
    }

    @Test(
        "a splice starts the next broadcast where the last frame pushed ends; the previous one's frames keep their offset"
    )
    func splice() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 5_000_000, liveEdgeUs: 5_000_000, now: 100 * ms, latencyNs: latency, epoch: 1)
        // The last audio frame of broadcast 1: 20 ms long, ending at 1.02 s.
        let last = t.runningTime(of: 5_900_000, epoch: 1)
        t.pushed(last, endNs: last + 20 * ms)
        let spliced = t.splice(epoch: 2)
        let again = t.splice(epoch: 2)
        #expect(spliced && !again, "the second pad does not splice again")
        // Broadcast 2's clock is unrelated (it starts at 0.3 s): its first frame follows at once.
        let first = t.place(timestampUs: 300_000, liveEdgeUs: 700_000, now: 400 * ms, latencyNs: latency, epoch: 2)
        #expect(first.placement == .anchored && first.pts == last + 20 * ms)
        let next = t.place(timestampUs: 320_000, liveEdgeUs: 700_000, now: 400 * ms, latencyNs: latency, epoch: 2)
        #expect(next.placement == .continued && next.pts == last + 40 * ms)
        // A video frame of broadcast 1 pushed after the splice stays on broadcast 1's timeline.
        #expect(t.runningTime(of: 5_933_000, epoch: 1) == last + 33 * ms)
        let late = t.place(timestampUs: 5_933_000, liveEdgeUs: 5_933_000, now: 400 * ms, latencyNs: latency, epoch: 1)
        #expect(late.placement == .continued && late.pts == last + 33 * ms)
    }

    @Test("a splice after the previous broadcast's end has passed starts the next one now")
    func spliceAfterEnd() {
        var t = PlayoutTimeline()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 0, latencyNs: latency, epoch: 1)
        t.pushed(100 * ms, endNs: 120 * ms)
        t.splice(epoch: 2)
        let first = t.place(
            timestampUs: 9_000_000, liveEdgeUs: 9_000_000, now: 2_000 * ms, latencyNs: latency, epoch: 2)
        #expect(first.placement == .anchored && first.pts == 2_000 * ms)
    }
}

// SPDX-License-Identifier: MIT
import MoqBase
import MoqPlayback
import Testing

@Suite("PlayoutTimeline, adaptive latency: a margin that starts at 0 and grows with lateness")
struct AdaptiveLatencyTests {
    let ms: UInt64 = 1_000_000
    /// The pipeline's own latency (a sink's processing deadline): the budget before any margin.
    let renderDelay: UInt64 = 20_000_000

    func adaptive(ceilingMs: UInt64 = 100) -> PlayoutTimeline {
        PlayoutTimeline(adaptive: AdaptiveLatency(ceilingNs: ceilingMs * 1_000_000))
    }

    @Test("with no lateness there is no margin: the live edge renders after the pipeline's latency only")
    func startsAtZero() {
        var t = adaptive()
        let first = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        #expect(first.placement == .anchored && first.pts == 1_000 * ms)
        // 15 ms of jitter is inside the pipeline's own 20 ms.
        let next = t.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_015 * ms, latencyNs: renderDelay)
        #expect(next.placement == .continued && next.pts == 2_000 * ms)
        #expect(t.marginNs == 0 && t.retargets == 0)
    }

    @Test("a late live edge grows the margin by its lateness plus 10 ms, and moves the timeline by that only")
    func growsByLateness() {
        var t = adaptive()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        // 50 ms after its ideal arrival: 30 ms past its deadline.
        let late = t.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_050 * ms, latencyNs: renderDelay)
        #expect(late.placement == .retargeted(ns: 40 * ms))
        #expect(late.pts == 2_040 * ms)
        #expect(t.marginNs == 40 * ms)
        // A fixed budget would have moved it by 50 ms (the edge to now, the whole budget restored).
        var fixed = PlayoutTimeline()
        _ = fixed.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        #expect(
            fixed.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_050 * ms, latencyNs: renderDelay)
                .placement == .retargeted(ns: 50 * ms))
        // The same jitter again is absorbed.
        let again = t.place(timestampUs: 2_000_000, liveEdgeUs: 2_000_000, now: 3_050 * ms, latencyNs: renderDelay)
        #expect(again.placement == .continued && t.retargets == 1)
    }

    @Test("lateness inside a group grows the margin at the next group start, even if that start is on time")
    func lateInsideGroup() {
        var t = adaptive()
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        let pts = t.runningTime(of: 500_000)
        t.observe(timestampUs: 500_000, now: pts + renderDelay + 25 * ms, latencyNs: renderDelay)
        #expect(t.marginNs == 0)
        let start = t.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_000 * ms, latencyNs: renderDelay)
        #expect(start.placement == .retargeted(ns: 35 * ms))
        #expect(t.marginNs == 35 * ms && start.pts == 2_035 * ms)
    }

    @Test("the margin never passes the ceiling; past it a late edge catches up as with a fixed budget")
    func ceiling() {
        var t = adaptive(ceilingMs: 25)
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        let late = t.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_050 * ms, latencyNs: renderDelay)
        #expect(t.marginNs == 25 * ms)
        // The edge to now plus the margin: the margin lives in the offset and is not lost.
        #expect(late.placement == .retargeted(ns: 75 * ms) && late.pts == 2_075 * ms)
        // A lower ceiling while playing stops growth; what was added stays.
        t.setAdaptiveCeiling(ns: 10 * ms)
        _ = t.place(timestampUs: 2_000_000, liveEdgeUs: 2_000_000, now: 3_200 * ms, latencyNs: renderDelay)
        #expect(t.marginNs == 25 * ms)
    }

    @Test("lateness is ignored before the anchor and in the grace period after a reconnect")
    func ignoredLateness() {
        var t = adaptive()
        t.observe(timestampUs: 0, now: 5_000 * ms, latencyNs: renderDelay)
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        #expect(t.marginNs == 0)
        t.pushed(1_900 * ms)
        t.markDiscontinuity()
        _ = t.place(timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_000 * ms, latencyNs: renderDelay)
        // Backlog after the reconnect, far behind its deadline: dropped by the pad, not learnt.
        t.observe(timestampUs: 500_000, now: 2_500 * ms, latencyNs: renderDelay)
        let start = t.place(timestampUs: 2_000_000, liveEdgeUs: 2_000_000, now: 3_000 * ms, latencyNs: renderDelay)
        #expect(start.placement == .continued && t.marginNs == 0)
        // After the grace period an on-time group start grows nothing: the backlog was not remembered.
        let after = t.place(timestampUs: 4_000_000, liveEdgeUs: 4_000_000, now: 5_000 * ms, latencyNs: renderDelay)
        #expect(!t.isInLateGrace(now: 5_000 * ms))
        #expect(after.placement == .continued && t.marginNs == 0)
    }

    @Test("under 0–60 ms of random jitter the margin settles after a few retargets and nothing is late after it")
    func settlesUnderJitter() {
        var t = adaptive()
        var random = SeededGenerator(seed: 11)
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay)
        var lateAfterSettling = 0
        for frame in 1...600 {
            let ideal = 1_000 * ms + UInt64(frame) * 33 * ms
            let arrival = ideal + UInt64.random(in: 0...60, using: &random) * ms
            let placed = t.place(
                timestampUs: UInt64(frame) * 33_000, liveEdgeUs: UInt64(frame) * 33_000, now: arrival,
                latencyNs: renderDelay)
            if frame > 300, placed.pts + renderDelay < arrival { lateAfterSettling += 1 }
        }
        #expect(t.retargets <= 4, "retargets \(t.retargets)")
        // At most the worst jitter past the pipeline's latency, plus one step.
        #expect(t.marginNs <= 50 * ms, "margin \(t.marginNs / ms) ms")
        #expect(lateAfterSettling == 0)
    }

    @Test(
        "lateness within the tolerance (a video sink renders 20 ms late) neither grows the margin nor moves the timeline"
    )
    func tolerance() {
        var t = adaptive()
        let video: UInt64 = 20 * ms
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_000 * ms, latencyNs: renderDelay, toleranceNs: video)
        let slightly = t.place(
            timestampUs: 1_000_000, liveEdgeUs: 1_000_000, now: 2_035 * ms, latencyNs: renderDelay, toleranceNs: video)
        #expect(slightly.placement == .continued && t.marginNs == 0)
        // 30 ms past the deadline: 10 ms beyond the tolerance, so the margin grows by 20 ms.
        let late = t.place(
            timestampUs: 2_000_000, liveEdgeUs: 2_000_000, now: 3_050 * ms, latencyNs: renderDelay, toleranceNs: video)
        #expect(late.placement == .retargeted(ns: 20 * ms) && t.marginNs == 20 * ms)
    }

    @Test("an anchor that waited in a cache is tightened by the live frames of the next second, monotonically")
    func settlesAnEarlyAnchor() {
        var t = adaptive()
        // The newest frame the relay had was captured 25 ms before it reached the player.
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_025 * ms, latencyNs: renderDelay)
        var placed: [UInt64] = []
        for frame in 1...6 {
            let ts = UInt64(frame) * 33_000
            // Live frames arrive at their ideal time (1 s + ts).
            t.observe(timestampUs: ts, now: 1_000 * ms + ts * 1000, latencyNs: renderDelay)
            placed.append(t.runningTime(of: ts) / ms)
        }
        // 5 ms a step, a step per 20 ms at most: the live frames land on their arrival after five.
        #expect(placed == [1_053, 1_081, 1_109, 1_137, 1_165, 1_198], "\(placed)")
        #expect(t.adaptive?.tightenedNs == 25 * ms)
        // After the settling second an early frame no longer moves the timeline.
        let before = t.runningTime(of: 2_000_000)
        t.observe(timestampUs: 2_000_000, now: 2_900 * ms, latencyNs: renderDelay)
        #expect(t.runningTime(of: 2_000_000) == before)
    }

    @Test("tightening with audio (20 ms) and video (33 ms) interleaved keeps each track's timestamps monotonic")
    func tighteningKeepsEveryTrackMonotonic() {
        var t = adaptive()
        // 60 ms of excess at the anchor; then a burst of cached frames (arriving at once), then live ones.
        _ = t.place(timestampUs: 0, liveEdgeUs: 0, now: 1_060 * ms, latencyNs: renderDelay)
        var arrivals: [(ts: UInt64, now: UInt64, audio: Bool)] = []
        for i in 0..<50 { arrivals.append((UInt64(i) * 20_000, max(1_060, 1_000 + UInt64(i) * 20) * ms, true)) }
        for i in 0..<30 { arrivals.append((UInt64(i) * 33_000, max(1_060, 1_000 + UInt64(i) * 33) * ms, false)) }
        arrivals.sort { $0.now != $1.now ? $0.now < $1.now : $0.audio && !$1.audio }
        var last: [Bool: UInt64] = [:]
        var backwards = 0
        for a in arrivals {
            t.observe(timestampUs: a.ts, now: a.now, latencyNs: renderDelay)
            let pts = t.runningTime(of: a.ts)
            if let previous = last[a.audio], pts <= previous { backwards += 1 }
            last[a.audio] = pts
        }
        #expect(backwards == 0)
        #expect((t.adaptive?.tightenedNs ?? 0) >= 50 * ms, "tightened \((t.adaptive?.tightenedNs ?? 0) / ms) ms")
    }

    @Test("a fixed budget never tightens, and a seek's anchor is not tightened either")
    func noTighteningWhenFixedOrSeeking() {
        var fixed = PlayoutTimeline()
        _ = fixed.place(timestampUs: 0, liveEdgeUs: 0, now: 1_025 * ms, latencyNs: renderDelay)
        fixed.observe(timestampUs: 33_000, now: 1_033 * ms, latencyNs: renderDelay)
        #expect(fixed.runningTime(of: 33_000) == 1_058 * ms)
        var seeking = adaptive()
        seeking.seek(id: 1, timestampUs: 0, at: 1_025 * ms)
        seeking.observe(timestampUs: 33_000, now: 1_033 * ms, latencyNs: renderDelay)
        #expect(seeking.runningTime(of: 33_000) == 1_058 * ms)
    }

    @Test("long-form playback takes no adaptive margin")
    func longFormIsNotAdaptive() {
        let t = PlayoutTimeline(longForm: true, adaptive: AdaptiveLatency(ceilingNs: 100 * ms))
        #expect(t.adaptive == nil)
    }
}

// SPDX-License-Identifier: MIT
import MoqPlayback
import Testing

@Suite("PlaybackCounters: moq-kit's PlaybackStats over a one-second window")
struct PlaybackCountersTests {
    let s: UInt64 = 1_000_000_000

    @Test("fps, bitrate and playout delay over the last second; time to first frame")
    func window() {
        let c = PlaybackCounters(startedAt: 10 * s)
        for i in 0..<60 {
            c.framePushed(
                bytes: 1000, now: 10 * s + 200_000_000 + UInt64(i) * s / 30, slackNs: 100_000_000, bufferNs: 0)
        }
        let snap = c.snapshot(now: 12 * s + 200_000_000)
        #expect(snap.frames == 60)
        #expect(snap.fps == 30)
        #expect(snap.bitrateKbps == 240)
        #expect(snap.latencyMs == 100)
        #expect(snap.timeToFirstFrameMs == 200)
    }

    @Test("frames decoded but not shown (before the join point) count as frames, not in the playout delay")
    func decodeOnlyFramesKeepOutOfTheLatency() {
        let c = PlaybackCounters(startedAt: 0)
        // Primed an hour before running time 0: its "deadline" is not playback's.
        c.framePushed(bytes: 10, now: s, slackNs: nil, bufferNs: 0)
        for i in 1...3 { c.framePushed(bytes: 10, now: s + UInt64(i) * 10_000_000, slackNs: 50_000_000, bufferNs: 0) }
        let snap = c.snapshot(now: s + 40_000_000)
        #expect(snap.frames == 4)
        #expect(snap.latencyMs == 50)
    }

    @Test("a second without frames is a stall; the next frame ends it with its duration")
    func stalls() {
        let c = PlaybackCounters(startedAt: 0)
        c.framePushed(bytes: 1, now: s, slackNs: 0, bufferNs: 0)
        #expect(!c.checkStall(now: s + 900_000_000))
        #expect(c.checkStall(now: 2 * s))
        #expect(!c.checkStall(now: 2 * s + 1), "counted once")
        #expect(c.snapshot(now: 2 * s + 500_000_000).stalled)
        let ended = c.framePushed(bytes: 1, now: 3 * s, slackNs: 0, bufferNs: 0)
        #expect(ended == 2 * s)
        let snap = c.snapshot(now: 3 * s)
        #expect(snap.stalls == 1 && !snap.stalled && snap.stallDurationMs == 2000)
    }
}

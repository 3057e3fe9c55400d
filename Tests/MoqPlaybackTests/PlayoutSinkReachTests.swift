// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import Testing

/// What the sinks make of a join (issue #22: every audio frame shown is heard). A fresh pipeline
/// plays only once every sink has prerolled (a video decoder's plugin loading takes 0.3–1.5 s for
/// a first viewer): a buffer that reaches a sink before then waits there, and audio due meanwhile
/// is late. And an audio sink reads its device buffer ahead of what is heard (200 ms by default,
/// inside the render delay), so a sample due sooner than that after it arrives is dropped.
@Suite("Playout: a join and the sinks that play it")
struct PlayoutSinkReachTests {
    /// A viewer whose audio device buffers 200 ms (render delay 230 ms), whose relay holds 300 ms
    /// of audio before the join, and whose pipeline started `runningMs` before the join and plays
    /// `prerollMs` after its pads' downstream was set up.
    func world(
        prerollMs: UInt64, runningMs: UInt64 = 50, _ change: (inout PlayoutCore.Tuning) -> Void = { _ in }
    ) -> PlayoutWorld {
        var tuning = PlayoutCore.Tuning()
        change(&tuning)
        var world = PlayoutWorld(
            .init(
                gopFrames: 60, joinAtMs: 3_100, playMs: 2_500, audioBudgetMs: 300, renderDelayNs: 230_000_000,
                pipelineRunningMs: runningMs, tuning: tuning, prerollMs: prerollMs, audioSinkReadAheadMs: 200))
        world.run()
        return world
    }

    @Test("a join waits for the pipeline to play: every audio frame shown is heard; ablated, the first are late")
    func joinWaitsForPlaying() {
        let full = world(prerollMs: 400)
        #expect(full.lateAtAudioSink().isEmpty, "late at the sink: \(full.lateAtAudioSink().prefix(3))")
        let heard = full.audioContiguous(atLeast: 80)
        #expect(heard)
        #expect(full.bentAudio().isEmpty)
        // The live edge then plays at the target as after any join (the render delay on top).
        #expect(median(full.latenciesMs(.video, fromMs: 1_000)) < 230 + 60)
        let ablated = world(prerollMs: 400) { $0.waitsForPlaying = false }
        let late = ablated.lateAtAudioSink().count
        #expect(late > 5, "placed before the pipeline played, audio waits at its sink")
    }

    @Test("audio starts where its sink can still play it; ablated (from video's join point), its first frames are late")
    func audioJoinsWithinReach() {
        // A pipeline playing for a second (a reconnect, the next broadcast of a follow): the join
        // point is the whole render delay before now (a fresh one's is running time 0, which
        // leaves the first 30 ms of audio within the read-ahead).
        let full = world(prerollMs: 0, runningMs: 1_000)
        #expect(full.lateAtAudioSink().isEmpty, "late at the sink: \(full.lateAtAudioSink().prefix(3))")
        let heard = full.audioContiguous(atLeast: 80)
        #expect(heard)
        let ablated = world(prerollMs: 0, runningMs: 1_000) { $0.audioJoinsWithinReach = false }
        let late = ablated.lateAtAudioSink().count
        #expect(late >= 5, "due within the device's read-ahead of the join")
    }
}

// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import Testing

/// After a stall, live playback returns to its target (issue #22, point 4), without bending audio.
@Suite("Playout: a stall, then catch-up")
struct PlayoutCatchUpTests {
    static func stalled(catchUp: Bool, mode: PlayoutPolicy.Mode = .adaptive, audio: Bool = true) -> PlayoutWorld {
        var world = PlayoutWorld(
            .init(
                audio: audio, gopFrames: 30, joinAtMs: 2_000, playMs: 16_000, stalls: [(4_000, 5_000)],
                renderDelayNs: mode == .fixed ? 100_000_000 : 0,
                policy: PlayoutPolicy(mode: mode, latencyNs: 100_000_000, catchUp: catchUp)))
        world.run()
        return world
    }

    /// Latency of frames rendered in [from, to) ms after the join.
    static func window(_ world: PlayoutWorld, _ kind: MediaKind, _ from: UInt64, _ to: UInt64) -> [Double] {
        world.shown(kind).filter {
            $0.renderNs >= world.joinNs + from * 1_000_000 && $0.renderNs < world.joinNs + to * 1_000_000
        }.map { Double(Int64($0.renderNs) - Int64($0.frame.timestampUs * 1000)) / 1e6 }
    }

    @Test("after a 1 s stall the delay it added is taken back within 10 s, audio contiguous throughout")
    func catchesUp() {
        let world = Self.stalled(catchUp: true)
        let before = median(Self.window(world, .video, 500, 2_000))
        let right = median(Self.window(world, .video, 3_100, 3_600))
        let after = Self.window(world, .audio, 13_000, 16_000)
        #expect(right > before + 700, "the stall added its second: \(before) → \(right) ms")
        #expect(after.allSatisfy { abs($0 - before) < 50 }, "back within 50 ms of \(before): \(after.max() ?? 0) ms")
        #expect(abs(median(Self.window(world, .video, 13_000, 16_000)) - before) < 50)
        #expect(world.bentAudio().isEmpty, "audio bent: \(world.bentAudio().prefix(3))")
        // Whole frames, at most one in five.
        let drops = world.drops(.audio)[.catchUp] ?? 0
        let pushed = world.outcomes[.audio]!.filter { $0.push != nil }.count
        #expect(drops > 30 && drops * 4 <= pushed, "\(drops) catch-up drops of \(pushed)")
    }

    @Test("catch-up off (recording): nothing is dropped and the stall's delay stays (the ablation)")
    func noCatchUp() {
        let world = Self.stalled(catchUp: false)
        let before = median(Self.window(world, .video, 500, 2_000))
        let after = median(Self.window(world, .audio, 13_000, 16_000))
        #expect(after > before + 700, "\(before) → \(after) ms")
        #expect(world.drops(.audio)[.catchUp] == nil)
        #expect(world.bentAudio().isEmpty)
    }

    @Test("a fixed budget catches up to its budget too")
    func fixedCatchesUp() {
        let world = Self.stalled(catchUp: true, mode: .fixed)
        let before = median(Self.window(world, .video, 500, 2_000))
        let after = median(Self.window(world, .video, 13_000, 16_000))
        #expect(abs(before - 105) < 25 && abs(after - before) < 50, "\(before) → \(after) ms")
        #expect(world.bentAudio().isEmpty)
    }

    @Test("video alone catches up by placing frames closer together, never backwards")
    func videoAloneCatchesUp() {
        let world = Self.stalled(catchUp: true, audio: false)
        let before = median(Self.window(world, .video, 500, 2_000))
        let after = median(Self.window(world, .video, 13_000, 16_000))
        #expect(abs(after - before) < 50, "\(before) → \(after) ms")
        let pts = (world.outcomes[.video] ?? []).compactMap(\.push?.pts)
        #expect(zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("the adaptive margin grows under jitter, then shrinks again once the path is steady")
    func marginFollowsThePath() {
        // 0–40 ms of jitter for the first 6 s, none after.
        var world = PlayoutWorld(
            .init(
                gopFrames: 30, joinAtMs: 2_000, playMs: 40_000,
                jitterUs: { _, us in us < 8_000_000 ? (us * 7919) % 40_000 : 0 }))
        world.run()
        let jittery = median(Self.window(world, .audio, 3_000, 6_000))
        let steady = median(Self.window(world, .audio, 37_000, 40_000))
        #expect(jittery > 30, "the margin grew: \(jittery) ms")
        #expect(steady < jittery - 15, "and shrank once steady: \(jittery) → \(steady) ms")
        #expect(world.bentAudio().isEmpty)
        // Nothing late once the margin settled: no gap in what was shown after the first seconds.
        let late = world.outcomes[.audio]!.filter { $0.decidedAtNs > world.joinNs + 3_000_000_000 }.filter {
            if case .skipGroup(.late) = $0.decision { return true }
            return false
        }
        #expect(late.count < 3, "\(late.count) late audio frames after settling")
    }

    @Test("a join that settled on late frames (an encoder starting up) is taken back once the path shows it")
    func joinEstimateTakenBack() {
        // Everything captured around the join left the publisher 50 ms late; what follows is on time.
        var world = PlayoutWorld(
            .init(
                gopFrames: 30, joinAtMs: 3_000, playMs: 8_000,
                jitterUs: { _, us in us >= 2_500_000 && us < 3_300_000 ? 50_000 : 0 }))
        world.run()
        let early = median(Self.window(world, .audio, 500, 1_500))
        let late = median(Self.window(world, .audio, 6_000, 8_000))
        #expect(early > 45, "the join placed the edge where the late frames said: \(early) ms")
        #expect(late < 30, "taken back by catch-up: \(late) ms")
        #expect(world.bentAudio().isEmpty)
    }
}

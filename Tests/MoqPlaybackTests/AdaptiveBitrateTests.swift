// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqMedia
import MoqPlayback
import Testing

/// Adaptive bitrate's decisions on a simulated bottleneck (``LadderLink``), with the issue's
/// ladder (3.5 / 1.2 / 0.4 Mbit/s) and caps.
@Suite("AdaptiveBitrate: which rung a player's path can carry")
struct AdaptiveBitrateTests {
    static let ladder: [UInt64] = [400_000, 1_200_000, 3_500_000]

    @Test("uncapped: the top rendition throughout, never a switch")
    func uncapped() {
        var link = LadderLink(bitrates: Self.ladder, capacity: [(0, 100_000_000)])
        link.run(untilMs: 30_000)
        #expect(link.rungAt.count == 1 && link.rung(atMs: 30_000) == 2)
        #expect(link.abr.stats.switchesDown == 0)
    }

    @Test("under a 2 Mbit/s cap it settles on the 1.2 Mbit/s rung within 2 s and stays there")
    func twoMegabitCap() {
        var link = LadderLink(bitrates: Self.ladder, capacity: [(0, 2_000_000)])
        link.run(untilMs: 60_000)
        #expect(link.rung(atMs: 2_000) == 1, "\(link.rungAt)")
        let settled = link.rungAt.allSatisfy { $0.ms <= 2_000 }
        #expect(settled, "no switch after settling: \(link.rungAt)")
        #expect(link.maxLateness(fromMs: 5_000, toMs: 60_000) < 200, "failed trials up cost no stall")
    }

    @Test("the cap dropping from 6 to 1.5 Mbit/s: down within 1 s; lifting again: up within 10 s")
    func changingCap() {
        var link = LadderLink(
            bitrates: Self.ladder, capacity: [(0, 6_000_000), (20_000, 1_500_000), (40_000, 6_000_000)])
        link.run(untilMs: 60_000)
        #expect(link.rung(atMs: 19_900) == 2, "\(link.rungAt)")
        let down = link.rungAt.first { $0.ms >= 20_000 }
        #expect(down.map { $0.ms <= 21_000 && $0.rung <= 1 } == true, "\(link.rungAt)")
        #expect(link.rung(atMs: 39_900) <= 1)
        let up = link.rungAt.first { $0.ms >= 40_000 && $0.rung == 2 }
        #expect(up.map { $0.ms <= 50_000 } == true, "\(link.rungAt)")
        #expect(link.maxLateness(fromMs: 40_000, toMs: 60_000) < 120, "stepping up never stalls")
    }

    /// The pad's samples every 100 ms, the newest frame `latenessMs` behind.
    static func sample(_ abr: inout AdaptiveBitrate, atMs t: UInt64, latenessMs: UInt64) -> AdaptiveBitrate.Advice {
        let newestMs = t - latenessMs
        abr.observe(nowNs: t * 1_000_000, bytes: t * 60, newest: (newestMs * 1_000_000, t * 1_000_000))
        return abr.advise(nowNs: t * 1_000_000)
    }

    @Test("a failed trial's burst draining does not step the rung that plays down; a rung that stays behind still goes")
    func failedTrialSettles() {
        let playable = Self.ladder.enumerated().map { i, b in
            var v = VideoConfig(codec: "avc3.64001f")
            v.bitrate = b
            return LadderLink.playable("r\(i)", v)
        }
        for staysBehind in [false, true] {
            var abr = AdaptiveBitrate(ladder: BitrateLadder(playable)!, start: 1, nowNs: 0)
            var t: UInt64 = 0
            while t < 3_000 {
                t += 100
                _ = Self.sample(&abr, atMs: t, latenessMs: 20)
            }
            abr.trialStarted(to: 2, nowNs: t * 1_000_000)
            t += 100
            #expect(
                Self.sample(&abr, atMs: t, latenessMs: 150) == .abandonTrial(reason: "current rendition fell behind"))
            abr.trialFailed(nowNs: t * 1_000_000)
            // Its burst drains: 450 ms behind (past the severe bound), then catching up, calm.
            var downAtMs: UInt64?
            for lateness: UInt64 in [450, 420, 350, 250, 150, 60, 20, 20, 20, 20] {
                t += 100
                if case .down = Self.sample(&abr, atMs: t, latenessMs: staysBehind ? 450 : lateness) {
                    downAtMs = downAtMs ?? t
                }
            }
            for _ in 0..<30 {
                t += 100
                if case .down = Self.sample(&abr, atMs: t, latenessMs: staysBehind ? 450 : 20) {
                    downAtMs = downAtMs ?? t
                }
            }
            if staysBehind {
                #expect(
                    downAtMs.map { $0 <= 3_100 + 3_100 } == true,
                    "down once the settle time is over: \(String(describing: downAtMs))")
            } else {
                #expect(downAtMs == nil, "the rung that fits stays: \(String(describing: downAtMs))")
            }
        }
    }

    @Test("without the down rule's capacity measure, one rung at a time is slower to reach the fitting one")
    func lateAlone() {
        // A ladder without bitrates (sizes only): each step is one rung, on lateness alone.
        let playable = [(320, 180), (1280, 720), (640, 360)].enumerated().map { i, size in
            var v = VideoConfig(codec: "avc3.64001f")
            v.codedWidth = UInt32(size.0)
            v.codedHeight = UInt32(size.1)
            return LadderLink.playable("s\(i)", v)
        }
        let ladder = BitrateLadder(playable)!
        #expect(ladder.rungs.map(\.name) == ["s0", "s2", "s1"], "ranked by size")
        #expect(!ladder.knowsBitrates)
        var abr = AdaptiveBitrate(ladder: ladder, start: 2, nowNs: 0)
        // Frames stop arriving at 1.5 s: lateness grows until it steps down, one rung.
        for t in stride(from: UInt64(100), through: 3_000, by: 100) {
            let arrivedMs = min(t, 1_500)
            abr.observe(
                nowNs: t * 1_000_000, bytes: arrivedMs * 100, newest: (arrivedMs * 1_000_000, arrivedMs * 1_000_000))
            if case .down(let to, _) = abr.advise(nowNs: t * 1_000_000) {
                #expect(to == 1)
                #expect(t >= 1_600 && t <= 1_800, "150 ms behind")
                return
            }
        }
        Issue.record("never stepped down")
    }
}

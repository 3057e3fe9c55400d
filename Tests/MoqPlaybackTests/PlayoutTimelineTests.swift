// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import Testing

/// The timeline's other moves: reconnects, a restarted publisher, pause and resume, a queue's
/// splice, seeks, long-form underruns, repeats after a resubscription.
@Suite("Playout: one timeline through reconnects, splices, seeks")
struct PlayoutTimelineTests {
    static let ms: UInt64 = 1_000_000

    /// A core with a video and an audio lane, deciding frames that arrive the moment they are
    /// decided (so the edge is the frame itself unless said otherwise). Monotonic = running + 1 s.
    struct Bench {
        var core: PlayoutCore
        let video: LaneID
        let audio: LaneID
        /// Monotonic minus running time (ms): grows while the running time stands still (a pause).
        var monotonicAheadMs: UInt64 = 1_000

        init(_ policy: PlayoutPolicy = PlayoutPolicy(mode: .fixed, latencyNs: 100 * ms), renderDelayNs: UInt64 = 0) {
            core = PlayoutCore(policy: policy)
            core.renderDelayNs = renderDelayNs
            video = core.register(.video)
            audio = core.register(.audio)
            // A running pipeline: its sinks prerolled long ago.
            core.pipelineIsPlaying()
        }

        func now(_ runningMs: UInt64) -> PlayoutNow {
            PlayoutNow(runningNs: runningMs * ms, monotonicNs: (runningMs + monotonicAheadMs) * ms)
        }

        /// Decides a frame at running time `atMs`, arrived then (or `arrivedAtMs`), with the
        /// track's edge at `edgeUs` (the frame itself by default).
        mutating func decide(
            _ lane: LaneID, group: UInt64, index: Int = 0, us: UInt64, atMs: UInt64, epoch: UInt64 = 1,
            edgeUs: UInt64? = nil, newer: Bool = false
        ) -> PlayoutDecision {
            let now = now(atMs)
            let edge = EdgeSample(
                timestampUs: edgeUs ?? us, arrivalNs: now.monotonicNs, group: group, count: index + 1)
            let decision = core.decide(
                PlayoutFrame(lane: lane, epoch: epoch, group: group, index: index, timestampUs: us, payloadBytes: 100),
                view: LaneView(edge: edge, hasNewerGroup: newer), now: now)
            // The pad sets up its downstream at once (a GAP, or the first push, returns).
            switch decision {
            case .hold(_, primes: true): core.pushReturned(lane)
            case .push(let push) where push.primes: core.pushReturned(lane)
            default: break
            }
            return decision
        }

        /// Joins: the first audio frame, another one 20 ms later that settles the edge (and is
        /// before the clip point unless the render delay covers it); returns the first push.
        mutating func join(us: UInt64, atMs: UInt64) -> PlayoutPush? {
            // Video's track has a live edge too (the join waits for every track's).
            for n in UInt64(0)..<2 {
                let now = now(atMs + n * 20)
                core.observe(
                    video,
                    edge: EdgeSample(
                        timestampUs: us + n * 20_000, arrivalNs: now.monotonicNs, group: 0, count: Int(n) + 1),
                    now: now)
            }
            for n in UInt64(0)..<3 {
                if case .push(let push) = decide(audio, group: n + 1, us: us + n * 20_000, atMs: atMs + n * 20) {
                    return push
                }
            }
            return nil
        }
    }

    static func pts(_ decision: PlayoutDecision) -> Int64? {
        if case .push(let push) = decision { return push.pts }
        return nil
    }

    @Test("every track shares one offset: the publisher's A/V offset survives")
    func sharedOffset() {
        var b = Bench()
        _ = b.join(us: 2_000_000, atMs: 1_000)
        let audio = Self.pts(b.decide(b.audio, group: 10, us: 2_100_000, atMs: 1_100))!
        let video = Self.pts(b.decide(b.video, group: 1, us: 2_400_000, atMs: 1_110))!
        #expect(video - audio == 300 * Int64(Self.ms), "300 ms later in the broadcast")
    }

    @Test("a live edge arriving after its render deadline moves the timeline later (a fixed budget restored)")
    func retargetsForward() {
        var b = Bench(renderDelayNs: 100 * Self.ms)
        let first = b.join(us: 0, atMs: 1_000)!
        // On time: 1 s later.
        #expect(Self.pts(b.decide(b.audio, group: 50, us: 1_000_000, atMs: 2_000)) == first.pts + 980 * Int64(Self.ms))
        // Stalled: the frame of t=2 s arrives 700 ms later than it should.
        guard case .push(let late) = b.decide(b.audio, group: 100, us: 2_000_000, atMs: 3_700) else {
            Issue.record("not pushed")
            return
        }
        #expect(late.discont, "audio jumps: the sink resyncs without a warning")
        if case .retargeted = late.note {} else { Issue.record("\(String(describing: late.note))") }
        #expect(late.pts == Int64(3_700 * Self.ms), "the edge plays now plus the whole budget")
        #expect(b.core.retargets == 1)
    }

    @Test("after a reconnect the same publisher's timeline continues, and late backlog frames are dropped for 2 s")
    func continuityAndGrace() {
        var b = Bench(renderDelayNs: 100 * Self.ms)
        let first = b.join(us: 0, atMs: 1_000)!
        _ = b.decide(b.audio, group: 10, us: 200_000, atMs: 1_180)
        b.core.markDiscontinuity()
        // 30 s later the first frame of the resubscription is 25 s old (a relay's backlog).
        let backlog = b.decide(b.audio, group: 1_000, us: 5_000_000, atMs: 31_000, edgeUs: 5_000_000, newer: true)
        #expect(backlog == .skipGroup(.late))
        #expect(b.core.retargets == 0)
        // The live edge arrives on time: played where it belongs, no latency added.
        let live = b.decide(b.audio, group: 2_000, us: 30_000_000, atMs: 31_010)
        #expect(Self.pts(live) == first.pts + Int64(29_980 * Self.ms))
    }

    @Test("a restarted publisher (timestamps back to 0) joins again after what was pushed")
    func restartedPublisher() {
        var b = Bench()
        _ = b.join(us: 50_000_000, atMs: 1_000)
        _ = b.decide(b.video, group: 1, us: 50_100_000, atMs: 1_100)
        let latest = b.core.latestPushedNs
        b.core.markDiscontinuity()
        b.core.reset(b.audio, .newSource(newEpoch: true, discont: true))
        #expect(b.decide(b.audio, group: 0, us: 0, atMs: 4_000, epoch: 2).isHold)
        for n in UInt64(0)..<2 {
            let now = b.now(4_000 + n * 20)
            b.core.observe(
                b.video,
                edge: EdgeSample(timestampUs: n * 20_000, arrivalNs: now.monotonicNs, group: 0, count: Int(n) + 1),
                now: now)
        }
        // The frame that completed the join is before its clip point (now plus the time a frame
        // needs to reach its sink): the next one plays.
        #expect(b.decide(b.audio, group: 1, us: 20_000, atMs: 4_020, epoch: 2) == .drop(.beforeJoin))
        let push = b.decide(b.audio, group: 2, us: 40_000, atMs: 4_040, epoch: 2)
        #expect(Self.pts(push).map { $0 > Int64(latest) } == true, "monotonic: after the last pushed buffer")
    }

    @Test("resuming after a pause joins the live edge again, after what was pushed")
    func resume() {
        var b = Bench()
        _ = b.join(us: 0, atMs: 1_000)
        _ = b.decide(b.audio, group: 3, us: 60_000, atMs: 3_000)
        b.core.rejoin(newClock: false)
        // 10 s of broadcast went by while the running time stood still: the edge is known, no wait.
        b.monotonicAheadMs += 10_000
        #expect(b.decide(b.audio, group: 500, us: 12_000_000, atMs: 3_010) == .drop(.beforeJoin))
        let push = b.decide(b.audio, group: 501, us: 12_020_000, atMs: 3_030)
        #expect(Self.pts(push) == Int64(3_030 * Self.ms), "the live edge, at once")
    }

    @Test(
        "a splice starts the next broadcast where the last frame pushed ends; the previous one's frames keep their offset"
    )
    func splice() {
        var b = Bench()
        _ = b.join(us: 5_000_000, atMs: 100)
        _ = b.decide(b.audio, group: 39, us: 5_880_000, atMs: 980)
        let last = Self.pts(b.decide(b.audio, group: 40, us: 5_900_000, atMs: 1_000))!
        let spliced = b.core.splice(epoch: 2)
        let again = b.core.splice(epoch: 2)
        #expect(spliced && !again, "the second pad does not splice again")
        b.core.reset(b.audio, .splice)
        b.core.reset(b.video, .splice)
        // Video's first frame of the next broadcast waits for audio to anchor the splice.
        #expect(b.decide(b.video, group: 0, us: 300_000, atMs: 1_005, epoch: 2).isHold)
        let first = Self.pts(b.decide(b.audio, group: 0, us: 300_000, atMs: 1_010, epoch: 2))
        #expect(first == last + Int64(20 * Self.ms))
        let next = Self.pts(b.decide(b.audio, group: 1, us: 320_000, atMs: 1_020, epoch: 2))
        #expect(next == last + Int64(40 * Self.ms))
        // A video frame of broadcast 1 pushed after the splice stays on broadcast 1's timeline.
        let old = Self.pts(b.decide(b.video, group: 9, us: 5_933_000, atMs: 1_030, epoch: 1))
        #expect(old == last + Int64(33 * Self.ms))
    }

    @Test("a seek puts its target at the given running time once per id")
    func seek() {
        var b = Bench(PlayoutPolicy(mode: .longForm, latencyNs: 100 * Self.ms))
        _ = b.decide(b.audio, group: 0, us: 0, atMs: 100)
        let moved = b.core.seek(id: 7, timestampUs: 300_000, at: 2_000 * Self.ms)
        let again = b.core.seek(id: 7, timestampUs: 300_000, at: 2_500 * Self.ms)
        #expect(moved && !again, "the second pad handling the same seek changes nothing")
        b.core.reset(b.audio, .seek)
        #expect(Self.pts(b.decide(b.audio, group: 16, us: 320_000, atMs: 1_990)) == Int64(2_020 * Self.ms))
    }

    @Test(
        "long-form plays every frame from the earliest track's first one; a late one moves the timeline (an underrun)")
    func longFormUnderrun() {
        var b = Bench(PlayoutPolicy(mode: .longForm, latencyNs: 100 * Self.ms), renderDelayNs: 100 * Self.ms)
        // Video's first keyframe comes later in the deep buffer than audio's first frame: the timeline
        // waits for both and starts at audio's, so audio before the keyframe is not late.
        #expect(b.decide(b.video, group: 0, us: 100_000, atMs: 500).isHold)
        let first = Self.pts(b.decide(b.audio, group: 0, us: 0, atMs: 500))
        #expect(first == Int64(500 * Self.ms), "anchored on the earliest first frame")
        #expect(Self.pts(b.decide(b.video, group: 0, us: 100_000, atMs: 505)) == Int64(600 * Self.ms))
        // Old frames (a backlog) are never skipped: 1 s of audio arrives in 100 ms.
        #expect(Self.pts(b.decide(b.audio, group: 1, us: 20_000, atMs: 510, newer: true)) == Int64(520 * Self.ms))
        guard case .push(let late) = b.decide(b.audio, group: 2, us: 40_000, atMs: 900, newer: true) else {
            Issue.record("not pushed")
            return
        }
        #expect(late.pts == Int64(900 * Self.ms) && late.discont && b.core.retargets == 1)
    }

    @Test("long-form whose second track never delivers starts after the join's wait, on what it has")
    func longFormOneTrack() {
        var b = Bench(PlayoutPolicy(mode: .longForm, latencyNs: 100 * Self.ms), renderDelayNs: 100 * Self.ms)
        #expect(b.decide(b.audio, group: 0, us: 0, atMs: 500).isHold)
        #expect(Self.pts(b.decide(b.audio, group: 0, us: 0, atMs: 760)) == Int64(760 * Self.ms))
    }

    @Test("repeats of a resubscription are dropped by position; a new epoch's first group decides")
    func repeats() {
        var b = Bench(renderDelayNs: 100 * Self.ms)
        _ = b.join(us: 0, atMs: 1_000)
        _ = b.decide(b.video, group: 5, us: 10_000, atMs: 1_010)
        _ = b.decide(b.video, group: 5, index: 1, us: 43_000, atMs: 1_040)
        b.core.reset(b.video, .newSource(newEpoch: false, discont: true))
        #expect(b.decide(b.video, group: 5, us: 10_000, atMs: 1_050) == .drop(.repeated))
        #expect(b.decide(b.video, group: 5, index: 1, us: 43_000, atMs: 1_060) == .drop(.repeated))
        #expect(Self.pts(b.decide(b.video, group: 5, index: 2, us: 76_000, atMs: 1_070)) != nil)
        // A restarted publisher's groups count from 0 again, with newer timestamps: not repeats.
        b.core.reset(b.video, .newSource(newEpoch: true, discont: true))
        #expect(b.decide(b.video, group: 0, index: 1, us: 900_000, atMs: 1_080) == .drop(.repeated))
        #expect(Self.pts(b.decide(b.video, group: 1, us: 933_000, atMs: 1_090)) != nil)
    }

    @Test("hostile timestamps (the varint ceiling) saturate: no trap, monotonic clamps")
    func hostileTimestamps() {
        var b = Bench()
        _ = b.join(us: (1 << 62) - 1_000_000, atMs: 1_000)
        for us: UInt64 in [0, 1 << 61, (1 << 62) - 1, 1] {
            _ = b.decide(b.audio, group: us % 1000 + 10, us: us, atMs: 1_100)
            _ = b.decide(b.video, group: us % 1000 + 10, us: us, atMs: 1_100)
        }
        #expect(b.core.runningTime(ofUs: (1 << 62) - 1) != nil)
    }
}

extension PlayoutDecision {
    var isHold: Bool {
        if case .hold = self { return true }
        return false
    }
}

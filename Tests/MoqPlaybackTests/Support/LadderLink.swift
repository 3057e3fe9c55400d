// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqMedia
import MoqPlayback

/// A simulated bottleneck between a relay and one player, for adaptive bitrate's decisions: a
/// publisher produces every rung of a ladder at 30 fps (a keyframe, five frames' worth, every
/// second), the relay sends the player's subscriptions through a link of a capacity that may
/// change (higher priority first, oldest first within one), and the player runs
/// ``AdaptiveBitrate`` every 100 ms and carries out its advice as moqsrc does: a step down
/// switches at once (the new rung from its current group), a step up is a trial beside the
/// current rung at a lower priority that takes over at one of its keyframes if it keeps up.
/// Everything happens on a virtual 1 ms clock.
struct LadderLink {
    static let ms: UInt64 = 1_000_000
    let bitrates: [UInt64]
    /// The link's capacity (bit/s) from each time (ms) on.
    var capacity: [(fromMs: UInt64, bps: UInt64)]
    var abr: AdaptiveBitrate

    /// One subscription's frames in flight or arrived.
    struct Subscription {
        var rung: Int
        var priority: Int
        var bytes: UInt64 = 0
        var newest: (timestampNs: UInt64, arrivalNs: UInt64)?
        /// Frames queued at the relay: (timestamp ms, bytes left, keyframe).
        var queue: [(tsMs: UInt64, left: Int, key: Bool)] = []
        /// Keyframes that arrived whole (timestamps, ms).
        var keyframesArrived: [UInt64] = []
    }
    var current: Subscription
    var trial: Subscription?
    /// What happened: (time ms, rung played) at each change, and the largest lateness seen.
    var rungAt: [(ms: UInt64, rung: Int)] = []
    var maxLatenessAfterMs: [(ms: UInt64, latenessMs: UInt64)] = []

    init(bitrates: [UInt64], capacity: [(fromMs: UInt64, bps: UInt64)], tuning: AdaptiveBitrate.Tuning = .init()) {
        self.bitrates = bitrates
        self.capacity = capacity
        let playable = bitrates.enumerated().map { i, b in
            var v = VideoConfig(codec: "avc3.64001f")
            v.bitrate = b
            return LadderLink.playable("r\(i)", v)
        }
        let ladder = BitrateLadder(playable)!
        abr = AdaptiveBitrate(ladder: ladder, start: ladder.top, nowNs: 0, tuning: tuning)
        current = Subscription(rung: ladder.top, priority: 1)
        rungAt = [(0, ladder.top)]
    }

    func frameBytes(rung: Int, key: Bool) -> Int {
        // 30 frames a second, the keyframe five of them: 34 shares.
        let share = Int(bitrates[rung] / 8 / 34)
        return key ? share * 5 : share
    }

    func capacity(atMs t: UInt64) -> UInt64 { capacity.last { $0.fromMs <= t }?.bps ?? 0 }

    /// A new subscription to `rung` at `t`: the relay sends its current group from the keyframe.
    func subscribe(_ rung: Int, priority: Int, atMs t: UInt64) -> Subscription {
        var s = Subscription(rung: rung, priority: priority)
        let groupStart = t / 1000 * 1000
        var ts = groupStart
        while ts <= t {
            s.queue.append((ts, frameBytes(rung: rung, key: ts == groupStart), ts == groupStart))
            ts += 33
        }
        return s
    }

    mutating func run(untilMs end: UInt64) {
        current = subscribe(current.rung, priority: 1, atMs: 0)
        var carry = 0.0
        for t in UInt64(1)...end {
            // The publisher: a frame every 33 ms (a keyframe each second), on every subscription.
            if t % 33 == 0 || t % 1000 == 0 {
                let key = t % 1000 == 0
                current.queue.append((t, frameBytes(rung: current.rung, key: key), key))
                if let r = trial?.rung { trial!.queue.append((t, frameBytes(rung: r, key: key), key)) }
            }
            // The link: this millisecond's bytes, current (higher priority) first.
            carry += Double(capacity(atMs: t)) / 8 / 1000
            var budget = Int(carry)
            carry -= Double(budget)
            Self.send(&current, budget: &budget, atMs: t)
            if trial != nil { Self.send(&trial!, budget: &budget, atMs: t) }
            if t % 100 == 0 { tick(atMs: t) }
        }
    }

    static func send(_ s: inout Subscription, budget: inout Int, atMs t: UInt64) {
        while budget > 0, !s.queue.isEmpty {
            let n = min(budget, s.queue[0].left)
            s.queue[0].left -= n
            budget -= n
            s.bytes += UInt64(n)
            if s.queue[0].left == 0 {
                let f = s.queue.removeFirst()
                // An encoder and a relay take 20 ms: an on-time frame arrives 20 ms after its time.
                s.newest = (f.tsMs * LadderLink.ms, max(t, f.tsMs + 20) * LadderLink.ms)
                if f.key { s.keyframesArrived.append(f.tsMs) }
            }
        }
    }

    mutating func tick(atMs t: UInt64) {
        let now = t * Self.ms
        abr.observe(nowNs: now, bytes: current.bytes + (trial?.bytes ?? 0), newest: current.newest)
        maxLatenessAfterMs.append((t, abr.latenessNs / Self.ms))
        abr.observeTrial(nowNs: now, newestTimestampNs: trial?.newest?.timestampNs)
        if var candidate = trial,
            let key = candidate.keyframesArrived.first(where: { $0 * Self.ms > abr.trial!.sinceNs })
        {
            if abr.trialKeepsUp(nowNs: now, candidateNewestNs: candidate.newest?.timestampNs ?? 0) {
                abr.switched(to: candidate.rung, nowNs: now)
                candidate.priority = 1
                candidate.queue.removeAll { $0.tsMs < key }
                current = candidate
                trial = nil
                rungAt.append((t, current.rung))
                return
            }
        }
        switch abr.advise(nowNs: now) {
        case .stay: break
        case .down(let rung, _):
            trial = nil
            current = subscribe(rung, priority: 1, atMs: t)
            abr.switched(to: rung, nowNs: now)
            rungAt.append((t, rung))
        case .tryUp(let rung, _):
            trial = subscribe(rung, priority: 0, atMs: t)
            // Only the next group counts for a trial: the current one's backlog is not sent.
            trial!.queue.removeAll()
            abr.trialStarted(to: rung, nowNs: now)
        case .abandonTrial:
            trial = nil
            abr.trialFailed(nowNs: now)
        }
    }

    /// The rung played at `t` (ms).
    func rung(atMs t: UInt64) -> Int { rungAt.last { $0.ms <= t }?.rung ?? 0 }
    /// The largest lateness (ms) seen in [from, to).
    func maxLateness(fromMs: UInt64, toMs: UInt64) -> UInt64 {
        maxLatenessAfterMs.filter { $0.ms >= fromMs && $0.ms < toMs }.map(\.latenessMs).max() ?? 0
    }
}

extension LadderLink {
    /// `config` as the catalog would list it, playable.
    static func playable(_ name: String, _ config: VideoConfig) -> PlayableRendition {
        var catalog = HangCatalog()
        catalog.set(name, .video(config))
        return MediaFormat.playable(in: catalog).playable[0]
    }
}

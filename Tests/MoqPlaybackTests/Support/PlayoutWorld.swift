// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback

/// A live broadcast, a relay and a viewer on virtual time, for the playout's tests: a publisher
/// captures video (a keyframe every `gopFrames`) and audio (20 ms frames), stamped with the
/// capture time on the same clock as the viewer's (one machine); the relay keeps the current video
/// group and the last audio frames within the viewer's budget; a viewer that joins at `joinAtMs`
/// receives that cache at once (a burst, audio newest first) and then the live frames after the
/// path's delay, or after a stall. Each pad reads its track in order and asks the playout about
/// every frame as soon as it has arrived (holding when told to), as moqsrc's pads do.
struct PlayoutWorld {
    struct Config {
        var video = true
        var audio = true
        var fps: UInt64 = 30
        var gopFrames = 60
        var audioFrameUs: UInt64 = 20_000
        /// The path's one-way delay (publisher to viewer), ms.
        var delayMs: UInt64 = 5
        /// When the viewer joins (ms after the broadcast started).
        var joinAtMs: UInt64 = 3_000
        /// How long the viewer plays (ms after joining).
        var playMs: UInt64 = 6_000
        /// Nothing gets through in these windows (ms); afterwards the backlog drains at
        /// ``drainRate`` times real time, in capture order, until it has caught up (a stall).
        var stalls: [(fromMs: UInt64, toMs: UInt64)] = []
        var drainRate: UInt64 = 3
        /// Audio frames leave the publisher this long after their timestamp (a whole frame is
        /// captured first, plus the encoder's look-ahead), ms.
        var audioLagMs: UInt64 = 0
        /// The audio budget the relay starts a subscription with (ms).
        var audioBudgetMs: UInt64 = 100
        /// The spacing of a burst's arrivals (µs per frame: the relay's send rate).
        var burstUsPerFrame: UInt64 = 30
        /// The pipeline's latency (ns).
        var renderDelayNs: UInt64 = 0
        /// How long before the join the player's pipeline started (its running time's base), ms.
        var pipelineRunningMs: UInt64 = 50
        var policy = PlayoutPolicy(mode: .adaptive, latencyNs: 100_000_000)
        var tuning = PlayoutCore.Tuning()
        /// How long a pad's first push blocks it (downstream being set up: decodebin plugging a
        /// decoder), ms, by kind.
        var firstPushBlocksMs: [MediaKind: UInt64] = [:]
        /// The pipeline plays (every sink prerolled on its pad's GAP) this long after every pad's
        /// downstream was set up (its GAP or first push returned), ms; nil: it played before the
        /// join. (Its base time stays where ``pipelineRunningMs`` put it.)
        var prerollMs: UInt64? = 0
        /// An audio sink reads this far ahead of what is heard (its device buffer, part of
        /// ``renderDelayNs``): a sample due sooner than that after it reaches the sink is dropped
        /// as late (alsasink, pulsesink), ms.
        var audioSinkReadAheadMs: UInt64 = 0
        /// Extra delay of individual frames (µs), by kind and capture time (µs).
        var jitterUs: @Sendable (MediaKind, UInt64) -> UInt64 = { _, _ in 0 }
    }

    struct Frame: Equatable {
        let kind: MediaKind
        let group: UInt64
        let index: Int
        let timestampUs: UInt64
        let arrivalNs: UInt64
        let bytes: Int
    }

    /// What happened to a frame.
    struct Outcome {
        let frame: Frame
        let decidedAtNs: UInt64
        let decision: PlayoutDecision

        var push: PlayoutPush? {
            if case .push(let push) = decision { return push }
            return nil
        }
    }

    let config: Config
    private(set) var core: PlayoutCore
    private(set) var outcomes: [MediaKind: [Outcome]] = [:]
    /// When the pipeline played (monotonic ns): what reaches a sink before waits there until then.
    private(set) var playingAtNs: UInt64 = 0
    /// The playout's state every 500 ms (ms after the join, margin ms, excess ms, catch-up drops).
    private(set) var trace: [(atMs: UInt64, marginMs: Double, excessMs: Double?, drops: UInt64)] = []
    private var lanes: [MediaKind: LaneID] = [:]
    private var tracks: [MediaKind: [Frame]] = [:]

    init(_ config: Config) {
        self.config = config
        core = PlayoutCore(policy: config.policy)
        core.tuning = config.tuning
        core.renderDelayNs = config.renderDelayNs
        if config.video { lanes[.video] = core.register(.video) }
        if config.audio { lanes[.audio] = core.register(.audio) }
        if config.prerollMs == nil { core.pipelineIsPlaying() }
        let endUs = (config.joinAtMs + config.playMs + 1_000) * 1000
        if config.video { tracks[.video] = Self.videoTrack(config, untilUs: endUs) }
        if config.audio { tracks[.audio] = Self.audioTrack(config, untilUs: endUs) }
    }

    var joinNs: UInt64 { config.joinAtMs * 1_000_000 }
    /// When the player's running time is 0 (monotonic ns).
    var baseNs: UInt64 { joinNs - config.pipelineRunningMs * 1_000_000 }

    /// When a frame captured at `us` reaches the viewer live (after a stall it covers, if any).
    static func liveArrivalNs(_ config: Config, kind: MediaKind, us: UInt64) -> UInt64 {
        var sent = us * 1000 + (kind == .audio ? config.audioLagMs * 1_000_000 : 0)
        for stall in config.stalls where us >= stall.fromMs * 1000 {
            let drained = stall.toMs * 1_000_000 + (us * 1000 - stall.fromMs * 1_000_000) / config.drainRate
            sent = max(sent, drained)
        }
        return sent + config.delayMs * 1_000_000 + config.jitterUs(kind, us) * 1000
    }

    static func videoTrack(_ config: Config, untilUs: UInt64) -> [Frame] {
        let intervalUs = 1_000_000 / config.fps
        let join = config.joinAtMs * 1_000_000
        let half = config.delayMs * 500_000
        var frames: [Frame] = []
        let joinFrame = Int(config.joinAtMs * 1000 / intervalUs)
        let joinGroup = joinFrame / config.gopFrames
        var n = joinGroup * config.gopFrames
        var burst: UInt64 = 0
        while UInt64(n) * intervalUs < untilUs {
            let us = UInt64(n) * intervalUs
            var arrival = liveArrivalNs(config, kind: .video, us: us)
            // In the relay's cache when the viewer subscribed: sent at once, in order.
            if us * 1000 + half <= join {
                burst += 1
                arrival = max(arrival, join + half + burst * config.burstUsPerFrame * 1000)
            }
            let bytes = n % config.gopFrames == 0 ? 20_000 : 2_000
            frames.append(
                Frame(
                    kind: .video, group: UInt64(n / config.gopFrames), index: n % config.gopFrames, timestampUs: us,
                    arrivalNs: arrival, bytes: bytes))
            n += 1
        }
        return frames
    }

    static func audioTrack(_ config: Config, untilUs: UInt64) -> [Frame] {
        let join = config.joinAtMs * 1_000_000
        let half = config.delayMs * 500_000
        // The newest frame the relay holds, and the oldest within the budget of it.
        let newest = (join - half - config.audioLagMs * 1_000_000) / 1000 / config.audioFrameUs
        let oldest = newest - min(newest, config.audioBudgetMs * 1000 / config.audioFrameUs)
        var frames: [Frame] = []
        var n = oldest
        while n * config.audioFrameUs < untilUs {
            let us = n * config.audioFrameUs
            var arrival = liveArrivalNs(config, kind: .audio, us: us)
            if n <= newest {
                // Newest first.
                arrival = join + half + (newest - n + 1) * config.burstUsPerFrame * 1000
            }
            frames.append(
                Frame(kind: .audio, group: n, index: 0, timestampUs: us, arrivalNs: arrival, bytes: 80 + Int(n % 7)))
            n += 1
        }
        return frames
    }

    /// The reader's view of a track at `now`.
    func view(_ kind: MediaKind, after group: UInt64, now: UInt64) -> LaneView {
        let arrived = (tracks[kind] ?? []).filter { $0.arrivalNs <= now }
        guard let newestGroup = arrived.map(\.group).max() else { return LaneView(edge: nil, hasNewerGroup: false) }
        let inGroup = arrived.filter { $0.group == newestGroup }
        let last = inGroup.max { $0.index < $1.index }!
        return LaneView(
            edge: EdgeSample(
                timestampUs: last.timestampUs, arrivalNs: inGroup.map(\.arrivalNs).max()!, group: newestGroup,
                count: inGroup.count),
            hasNewerGroup: newestGroup > group)
    }

    /// Plays from the join on, a millisecond at a time, until `playMs` after the join.
    mutating func run() {
        var next: [MediaKind: Int] = [:]
        var held: [MediaKind: UInt64] = [:]
        var skipping: [MediaKind: UInt64] = [:]
        var blockedUntil: [MediaKind: UInt64] = [:]
        var setUp: Set<MediaKind> = []
        var readyAt: UInt64?
        let end = joinNs + config.playMs * 1_000_000
        var now = joinNs
        /// Downstream of `kind` is set up now: blocks the pad for `firstPushBlocksMs` (true) or
        /// returns at once (false).
        func block(_ kind: MediaKind) -> Bool {
            setUp.insert(kind)
            let ns = (config.firstPushBlocksMs[kind] ?? 0) * 1_000_000
            guard ns > 0 else {
                if let lane = lanes[kind] { core.pushReturned(lane) }
                return false
            }
            blockedUntil[kind] = now + ns
            return true
        }
        while now < end {
            if let preroll = config.prerollMs, playingAtNs == 0 {
                let ready = lanes.keys.allSatisfy { setUp.contains($0) && blockedUntil[$0] == nil }
                if ready, readyAt == nil { readyAt = now }
                if let at = readyAt, now >= at + preroll * 1_000_000 {
                    core.pipelineIsPlaying()
                    playingAtNs = now
                }
            }
            for kind in [MediaKind.audio, .video] {
                guard let lane = lanes[kind], let track = tracks[kind] else { continue }
                if let until = blockedUntil[kind] {
                    if now < until { continue }
                    blockedUntil[kind] = nil
                    core.pushReturned(lane)
                }
                while true {
                    let i = next[kind] ?? 0
                    guard i < track.count, track[i].arrivalNs <= now else { break }
                    if let until = held[kind], now < until { break }
                    let frame = track[i]
                    if let group = skipping[kind], frame.group == group, frame.index > 0 {
                        next[kind] = i + 1
                        continue
                    }
                    let decision = core.decide(
                        PlayoutFrame(
                            lane: lane, epoch: 1, group: frame.group, index: frame.index,
                            timestampUs: frame.timestampUs, payloadBytes: frame.bytes,
                            arrivalNs: kind == .audio ? frame.arrivalNs : nil),
                        view: view(kind, after: frame.group, now: now),
                        now: PlayoutNow(runningNs: now - baseNs, monotonicNs: now))
                    if case .hold(let until, let primes) = decision {
                        held[kind] = until
                        // A GAP sets up what is downstream: it blocks as the first push would.
                        if primes { _ = block(kind) }
                        break
                    }
                    held[kind] = nil
                    if case .skipGroup = decision { skipping[kind] = frame.group }
                    outcomes[kind, default: []].append(Outcome(frame: frame, decidedAtNs: now, decision: decision))
                    next[kind] = i + 1
                    // The first data a pad sends (a priming push, or any push when nothing primed)
                    // blocks while downstream is set up.
                    if case .push = decision, !setUp.contains(kind), block(kind) { break }
                }
            }
            if (now - joinNs) % 500_000_000 == 0 {
                let snapshot = PlayoutSnapshot(core, now: PlayoutNow(runningNs: now - baseNs, monotonicNs: now))
                trace.append(((now - joinNs) / 1_000_000, snapshot.marginMs, snapshot.excessMs, snapshot.catchUpDrops))
            }
            now += 1_000_000
        }
    }

    // MARK: What a viewer sees and hears

    /// Frames shown (pushed, not decode-only, at or after the segment's start), with when they are
    /// rendered (monotonic ns): at their running time plus the render delay, or at once when that
    /// passed (a sink renders a late video frame).
    func shown(_ kind: MediaKind) -> [(frame: Frame, renderNs: UInt64)] {
        var segmentStart: Int64 = 0
        var result: [(Frame, UInt64)] = []
        for outcome in outcomes[kind] ?? [] {
            guard let push = outcome.push else { continue }
            if let start = push.segmentStartNs { segmentStart = start }
            guard !push.decodeOnly, push.pts >= segmentStart else { continue }
            let render = max(UInt64(push.pts) + config.renderDelayNs + baseNs, outcome.decidedAtNs)
            result.append((outcome.frame, render))
        }
        return result
    }

    /// Whether more than `count` audio frames were shown, each 20 ms after the one before.
    func audioContiguous(atLeast count: Int) -> Bool {
        let audio = shown(.audio).map(\.frame.timestampUs)
        return audio.count > count && zip(audio, audio.dropFirst()).allSatisfy { $1 - $0 == 20_000 }
    }

    /// Audio frames shown that the audio sink drops as late: they reach it (or the pipeline plays)
    /// less than its read-ahead before they are due.
    func lateAtAudioSink() -> [Frame] {
        var segmentStart: Int64 = 0
        var late: [Frame] = []
        for outcome in outcomes[.audio] ?? [] {
            guard let push = outcome.push else { continue }
            if let start = push.segmentStartNs { segmentStart = start }
            guard !push.decodeOnly, push.pts >= segmentStart else { continue }
            let due = UInt64(push.pts) + config.renderDelayNs + baseNs
            let reaches = max(outcome.decidedAtNs, playingAtNs)
            if reaches + config.audioSinkReadAheadMs * 1_000_000 > due { late.append(outcome.frame) }
        }
        return late
    }

    /// Glass to glass (ms) of each frame shown: rendered minus captured.
    func latenciesMs(_ kind: MediaKind, fromMs: UInt64 = 0) -> [Double] {
        shown(kind).filter { $0.renderNs >= joinNs + fromMs * 1_000_000 }.map {
            Double(Int64($0.renderNs) - Int64($0.frame.timestampUs * 1000)) / 1e6
        }
    }

    /// Audio pushes whose PTS is not where the previous one ended, without DISCONT: bent audio.
    func bentAudio() -> [(pts: Int64, expected: Int64)] {
        var bent: [(Int64, Int64)] = []
        var expected: Int64?
        for outcome in outcomes[.audio] ?? [] {
            guard let push = outcome.push else { continue }
            if let e = expected, !push.discont, push.pts != e { bent.append((push.pts, e)) }
            expected = push.pts + Int64(config.audioFrameUs * 1000)
        }
        return bent
    }

    /// Audio frames that reached the pad and were not pushed, by reason.
    func drops(_ kind: MediaKind) -> [PlayoutDrop: Int] {
        var counts: [PlayoutDrop: Int] = [:]
        for outcome in outcomes[kind] ?? [] {
            switch outcome.decision {
            case .drop(let reason), .skipGroup(let reason): counts[reason, default: 0] += 1
            default: break
            }
        }
        return counts
    }
}

/// The median of a list (nan when empty).
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

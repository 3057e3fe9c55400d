// SPDX-License-Identifier: MIT

/// Adaptive bitrate for one video pad, sans-IO: which rung of a ``BitrateLadder`` to play, from
/// what the path carries (``PathMonitor``: lateness and capacity from the track's own arrivals,
/// and the relay's PROBE report when it sends one). The pad samples it every ~100 ms and carries
/// out its advice; every number it uses is in ``Tuning``.
///
/// - **Down, before a stall**: when the playing rung's frames fall behind (``Tuning/downLatenessNs``)
///   or the path measured while it was the limit carries less than the rung needs, the pad
///   switches at once to the highest rung within ``Tuning/targetShare`` of the capacity (one
///   rung down when the catalog gives no bitrates). The switch is urgent: the new rendition's
///   current group is fetched and decoded up to where the old one stopped.
/// - **Up, never into a stall**: only after the path has been calm for a hold time, and not past
///   a PROBE estimate that says the next rung would not fit. The step up is a trial: the next
///   rung is subscribed beside the current one (at a lower priority, so it only takes spare
///   capacity) and replaces it at one of its group boundaries only if it keeps up there; if the
///   current rung suffers or the trial times out, it is abandoned and the hold doubles (also when
///   a step up is followed by a step down soon after), so a path that cannot carry the next rung
///   is not tried again and again.
public struct AdaptiveBitrate: Sendable {
    /// The thresholds (a test can change them).
    public struct Tuning: Sendable, Equatable {
        /// Lateness past which the rung is left (ns).
        public var downLatenessNs: UInt64 = 150_000_000
        /// Lateness past which one rung down is taken whatever the estimate says (ns).
        public var severeLatenessNs: UInt64 = 400_000_000
        /// The share of the capacity a rung's bitrate may use when stepping down.
        public var targetShare = 0.8
        /// A rung whose bitrate exceeds the measured capacity times this is left.
        public var overCapacity = 1.0
        /// After a switch, how long the new rung gets before it can be judged (ns): the old one's
        /// data still in flight is late too. Severe lateness does not wait.
        public var settleNs: UInt64 = 1_000_000_000
        /// Calm lateness: below this the path keeps up (ns). Above a keyframe's burst on a path
        /// with little headroom (a 5-frame keyframe of 1.2 Mbit/s takes 90 ms at 2 Mbit/s): the
        /// trial, not this, decides whether the next rung fits.
        public var calmLatenessNs: UInt64 = 120_000_000
        /// How long the path must be calm before a step up is tried, at first (ns); doubles after a
        /// failed trial up to ``maxUpHoldNs``.
        public var upHoldNs: UInt64 = 4_000_000_000
        public var maxUpHoldNs: UInt64 = 8_000_000_000
        /// A step down this soon after a step up makes the next step up wait twice as long (ns).
        public var flapNs: UInt64 = 10_000_000_000
        /// A trial is abandoned when the current rung falls this far behind (ns)…
        public var trialLatenessNs: UInt64 = 120_000_000
        /// …or when the candidate falls this far behind, once it had ``trialGraceNs`` (ns)…
        public var trialGiveUpNs: UInt64 = 500_000_000
        public var trialGraceNs: UInt64 = 1_000_000_000
        /// …or when it has not spliced within this long (ns).
        public var trialTimeoutNs: UInt64 = 8_000_000_000
        public init() {}
    }

    /// What the pad should do now.
    public enum Advice: Sendable, Equatable {
        case stay
        /// Switch at once to this (lower) rung.
        case down(to: Int, reason: String)
        /// Subscribe this (higher) rung beside the current one: a trial (``trialStarted(nowNs:)``).
        case tryUp(to: Int, reason: String)
        /// Abandon the trial (the candidate's subscription ends).
        case abandonTrial(reason: String)
    }

    /// The counters the element reports.
    public struct Stats: Sendable, Equatable {
        public var switchesUp = 0
        public var switchesDown = 0
        public var trialsFailed = 0
        /// Time spent on each rung (ns), by track name.
        public var timeOnRungNs: [String: UInt64] = [:]
    }

    public private(set) var ladder: BitrateLadder
    /// The rung playing.
    public private(set) var current: Int
    public var tuning: Tuning
    public private(set) var stats = Stats()
    /// The path's capacity as last measured while it was the limit (bit/s).
    public private(set) var capacityBps: Double?
    /// The relay's PROBE report (bit/s), if it sends them.
    public private(set) var probeBps: Double?
    /// A step up being tried: the rung and when it started.
    public private(set) var trial: (rung: Int, sinceNs: UInt64)?
    private var monitor = PathMonitor()
    /// The trial's candidate: how far its newest frame is behind (ns).
    private var candidateLatenessNs: UInt64 = 0
    private var lastSwitchNs: UInt64
    private var lastUpNs: UInt64?
    private var calmSinceNs: UInt64?
    private var upHoldNs: UInt64
    private var accountedNs: UInt64

    /// Starts on `start` (a rung index, clamped), at `nowNs`.
    public init(ladder: BitrateLadder, start: Int, nowNs: UInt64, tuning: Tuning = Tuning()) {
        self.ladder = ladder
        self.tuning = tuning
        current = min(max(0, start), ladder.rungs.count - 1)
        lastSwitchNs = nowNs
        accountedNs = nowNs
        upHoldNs = tuning.upHoldNs
    }

    /// Where a player starts: the top rung (within the caps the ladder was built with), unless a
    /// PROBE estimate already says it would not fit.
    public static func startingRung(_ ladder: BitrateLadder, probeBps: Double?, share: Double = 0.8) -> Int {
        if let probeBps, probeBps > 0, let within = ladder.highest(within: probeBps * share) {
            return min(within, ladder.top)
        }
        return ladder.top
    }

    /// The rung playing.
    public var currentRung: BitrateLadder.Rung { ladder.rungs[current] }

    /// How far the playing rung's newest frame is behind (ns).
    public var latenessNs: UInt64 { monitor.latenessNs }

    /// The estimate reported: what the path carries as best known (bit/s).
    public var estimateBps: Double? {
        switch (capacityBps, probeBps) {
        case (let c?, let p?): min(c, p)
        case (let c?, nil): c
        case (nil, let p?): p
        default: monitor.rateBps()
        }
    }

    /// A new catalog: the ladder may have changed. The playing rung stays if it is still in it.
    /// Returns false when it is not (the caller starts again).
    public mutating func update(ladder: BitrateLadder) -> Bool {
        let name = currentRung.name
        guard let index = ladder.index(of: name) else { return false }
        let trialName = trial.map { self.ladder.rungs[$0.rung].name }
        self.ladder = ladder
        current = index
        if let trialName, let t = ladder.index(of: trialName), let since = trial?.sinceNs {
            trial = (t, since)
        } else {
            trial = nil
        }
        return true
    }

    /// A PROBE report from the relay (bit/s; 0: unknown).
    public mutating func probed(bps: UInt64) { probeBps = bps > 0 ? Double(bps) : nil }

    /// A sample of the playing rung's track: its bytes received so far, its newest frame.
    public mutating func observe(nowNs: UInt64, bytes: UInt64, newest: (timestampNs: UInt64, arrivalNs: UInt64)?) {
        account(nowNs)
        monitor.observe(nowNs: nowNs, bytes: bytes, newest: newest)
        if let sample = monitor.capacitySampleBps {
            capacityBps = capacityBps.map { 0.5 * $0 + 0.5 * sample } ?? sample
        } else if !monitor.saturated, let rate = monitor.rateBps(), let c = capacityBps, rate > c {
            // Not the limit, and more arrives than the last measure said: it carries more now.
            capacityBps = rate
        }
        if monitor.latenessNs < tuning.calmLatenessNs {
            if calmSinceNs == nil { calmSinceNs = nowNs }
        } else {
            calmSinceNs = nil
        }
    }

    /// What to do now.
    public func advise(nowNs: UInt64) -> Advice {
        let lateness = monitor.latenessNs
        let settled = nowNs >= Saturating.add(lastSwitchNs, tuning.settleNs)
        if let trial {
            if lateness >= tuning.trialLatenessNs { return .abandonTrial(reason: "current rendition fell behind") }
            if candidateLatenessNs >= tuning.trialGiveUpNs, nowNs >= Saturating.add(trial.sinceNs, tuning.trialGraceNs)
            {
                return .abandonTrial(reason: "the next rendition does not keep up")
            }
            if nowNs >= Saturating.add(trial.sinceNs, tuning.trialTimeoutNs) {
                return .abandonTrial(reason: "no group boundary in time")
            }
            return .stay
        }
        if current > 0, settled || lateness >= tuning.severeLatenessNs * 2 {
            let bitrate = currentRung.bitrate.map(Double.init)
            let overCapacity =
                monitor.saturated && bitrate != nil && capacityBps.map { bitrate! > $0 * tuning.overCapacity } == true
            if lateness >= tuning.downLatenessNs || overCapacity {
                var target = current - 1
                if let c = capacityBps, let within = ladder.highest(within: c * tuning.targetShare) {
                    target = within
                }
                if target >= current {
                    // The capacity says it fits (a keyframe's burst, jitter): unless it is severe.
                    guard lateness >= tuning.severeLatenessNs else { return .stay }
                    target = current - 1
                }
                let why =
                    overCapacity
                    ? "the path carries \(Self.kbps(capacityBps)) kbit/s"
                    : "\(lateness / 1_000_000) ms behind, the path carries \(Self.kbps(estimateBps)) kbit/s"
                return .down(to: target, reason: why)
            }
        }
        guard current < ladder.top, let calm = calmSinceNs, settled,
            nowNs >= Saturating.add(calm, upHoldNs), nowNs >= Saturating.add(lastSwitchNs, upHoldNs)
        else { return .stay }
        let next = ladder.rungs.indices.first { $0 > current && !ladder.rungs[$0].stalled } ?? current + 1
        if let probeBps, let b = ladder.rungs[next].bitrate, Double(b) > probeBps * tuning.targetShare {
            return .stay
        }
        return .tryUp(to: next, reason: "calm for \((nowNs - calm) / 1_000_000) ms")
    }

    /// The pad subscribed the trial's rung.
    /// From now on ``observe(nowNs:bytes:newest:)`` counts the bytes of both subscriptions.
    public mutating func trialStarted(to rung: Int, nowNs: UInt64) {
        trial = (rung, nowNs)
        candidateLatenessNs = 0
        monitor.restartBytes()
    }

    /// A sample of the trial's candidate: its newest frame's timestamp (ns), nil before one arrived
    /// (measured against the playing track's best lead: renditions of one picture share timestamps).
    public mutating func observeTrial(nowNs: UInt64, newestTimestampNs: UInt64?) {
        guard let trial else { return }
        // Nothing yet: behind by the time since the trial started.
        candidateLatenessNs =
            newestTimestampNs.map { monitor.latenessNs(nowNs: nowNs, newestTimestampNs: $0) }
            ?? Saturating.minus(nowNs, trial.sinceNs)
    }

    /// The trial's rung has reached a group boundary where it could take over: whether it keeps
    /// up there (it and the current rung on time).
    public var trialKeepsUp: Bool {
        trial != nil && candidateLatenessNs < tuning.trialLatenessNs && monitor.latenessNs < tuning.trialLatenessNs
    }

    /// The trial was abandoned: the next one waits twice as long.
    public mutating func trialFailed(nowNs: UInt64) {
        account(nowNs)
        trial = nil
        monitor.restartBytes()
        stats.trialsFailed += 1
        upHoldNs = min(Saturating.add(upHoldNs, upHoldNs), tuning.maxUpHoldNs)
        calmSinceNs = nil
    }

    /// The pad now plays `rung` (a step down, or a trial that took over).
    public mutating func switched(to rung: Int, nowNs: UInt64) {
        account(nowNs)
        guard rung != current, ladder.rungs.indices.contains(rung) else {
            trial = nil
            return
        }
        if rung > current {
            stats.switchesUp += 1
            lastUpNs = nowNs
            // What was measured below no longer bounds it: the trial showed more fits.
            capacityBps = nil
        } else {
            stats.switchesDown += 1
            if let up = lastUpNs, nowNs < Saturating.add(up, tuning.flapNs) {
                upHoldNs = min(Saturating.add(upHoldNs, upHoldNs), tuning.maxUpHoldNs)
            }
        }
        current = rung
        trial = nil
        lastSwitchNs = nowNs
        calmSinceNs = nil
        monitor.restartBytes()
    }

    private mutating func account(_ nowNs: UInt64) {
        guard nowNs > accountedNs else { return }
        stats.timeOnRungNs[currentRung.name, default: 0] &+= nowNs - accountedNs
        accountedNs = nowNs
    }

    static func kbps(_ bps: Double?) -> String { bps.map { String(Int($0 / 1000)) } ?? "?" }
}

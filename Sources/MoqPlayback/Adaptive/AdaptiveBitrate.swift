// SPDX-License-Identifier: MIT

/// Adaptive bitrate for one video pad, sans-IO: which rung of a ``BitrateLadder`` to play, from
/// what the path carries (``PathMonitor``: lateness and capacity from the track's own arrivals and
/// the session's other tracks). The pad samples it every ~100 ms and carries out its advice; every
/// number it uses is in ``Tuning``.
///
/// - **Down, before a stall**: when the playing rung's frames fall behind faster than real time
///   (lateness growing ``Tuning/overloadGrowthNs`` in ``Tuning/overloadWindowNs``), or stay behind
///   (``Tuning/downLatenessNs``) without catching up, or the capacity measured while the path was
///   the limit is less than the rung needs, the pad switches at once to the highest rung within
///   ``Tuning/targetShare`` of that capacity (one rung down when there is no measure, or the
///   catalog gives no bitrates). A keyframe's burst also makes lateness grow, but the capacity
///   measured meanwhile says the rung fits. The switch is urgent: the new rendition's current
///   group is fetched and decoded up to where the old one stopped; the new rung is judged once it
///   has caught up (or after ``Tuning/maxSettleNs``).
/// - **Up, never into a stall**: only after the path has been calm for a hold time, and not while a
///   recent capacity measure (or the relay's PROBE report) says the next rung does not fit. The
///   step up is a trial: the next rung is subscribed beside the current one (at a lower priority,
///   so it only takes spare capacity) and replaces it at one of its group boundaries only if both
///   keep up there; if the current rung suffers, the candidate falls behind or no boundary comes
///   in time, it is abandoned, and what arrived meanwhile is the capacity that rules out the next
///   trial for ``Tuning/capacityFreshNs``; the current rung then settles as after a switch (what
///   the trial had in flight drains first). A step down soon after a step up doubles the hold.
public struct AdaptiveBitrate: Sendable {
    /// The thresholds (a test can change them).
    public struct Tuning: Sendable, Equatable {
        /// Lateness past which the rung is left, unless the path is catching up (ns).
        public var downLatenessNs: UInt64 = 150_000_000
        /// Lateness growing this much over ``overloadWindowNs``, past ``overloadLatenessNs``: the path
        /// carries less than the rung needs (a keyframe's burst grows it too, which the capacity
        /// measured meanwhile tells apart).
        public var overloadGrowthNs: UInt64 = 80_000_000
        public var overloadWindowNs: UInt64 = 200_000_000
        public var overloadLatenessNs: UInt64 = 80_000_000
        /// Lateness past which one rung down is taken whatever the estimate says (ns).
        public var severeLatenessNs: UInt64 = 400_000_000
        /// The share of the capacity a rung's bitrate may use when stepping down.
        public var targetShare = 0.8
        /// A rung whose bitrate exceeds the measured capacity times this is left.
        public var overCapacity = 1.0
        /// After a switch, how long the new rung gets before it can be judged (ns): the old one's
        /// data still in flight is late too, and the new one's first group catches up. It is
        /// judged once it has caught up (lateness calm once), or after ``maxSettleNs`` if it never does.
        public var settleNs: UInt64 = 1_000_000_000
        public var maxSettleNs: UInt64 = 3_000_000_000
        /// Calm lateness: below this the path keeps up (ns). Above a keyframe's burst on a path
        /// with little headroom (a 5-frame keyframe of 1.2 Mbit/s takes 90 ms at 2 Mbit/s): the
        /// trial, not this, decides whether the next rung fits.
        public var calmLatenessNs: UInt64 = 120_000_000
        /// How long the path must be calm before a step up is tried (ns); doubles when a step up is
        /// followed by a step down soon after (``flapNs``), up to ``maxUpHoldNs``.
        public var upHoldNs: UInt64 = 4_000_000_000
        public var maxUpHoldNs: UInt64 = 8_000_000_000
        /// A capacity measured this recently (while the path was the limit: a keyframe's burst, a
        /// backlog) rules out a trial of a rung it cannot carry; older, it is tried again (ns).
        public var capacityFreshNs: UInt64 = 6_000_000_000
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
    /// When ``capacityBps`` was last measured (monotonic ns).
    public private(set) var capacityAtNs: UInt64?
    /// The relay's PROBE report (bit/s), if it sends them.
    public private(set) var probeBps: Double?
    /// A step up being tried: the rung and when it started.
    public private(set) var trial: (rung: Int, sinceNs: UInt64)?
    private var monitor = PathMonitor()
    /// The trial's candidate: how far its newest frame is behind (ns), once measured.
    private var candidateLatenessNs: UInt64?
    private var lastSwitchNs: UInt64
    private var lastUpNs: UInt64?
    private var calmSinceNs: UInt64?
    /// Since the last switch, the new rung has not caught up yet.
    private var catchingUpSinceSwitch = false
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

    /// Where a player starts: the top rung (within the caps the ladder was built with). A step
    /// down follows within a second if the path cannot carry it. (The relay's PROBE report is not
    /// used here: at the start it is the congestion window's initial value over the RTT, which on
    /// a long path says 1 Mbit/s whatever the path carries.)
    public static func startingRung(_ ladder: BitrateLadder) -> Int { ladder.top }

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

    /// A sample of the playing rung's track: its bytes received so far, the session's other
    /// tracks' (audio: they share the path), everything the connection received (0: unknown), its
    /// newest frame.
    public mutating func observe(
        nowNs: UInt64, bytes: UInt64, otherBytes: UInt64 = 0, wireBytes: UInt64 = 0,
        newest: (timestampNs: UInt64, arrivalNs: UInt64)?
    ) {
        account(nowNs)
        monitor.observe(nowNs: nowNs, bytes: bytes, otherBytes: otherBytes, wireBytes: wireBytes, newest: newest)
        if let sample = monitor.capacitySampleBps {
            capacityBps = capacityBps.map { 0.5 * $0 + 0.5 * sample } ?? sample
            capacityAtNs = nowNs
        } else if !monitor.saturated, let rate = monitor.rateBps(all: true), let c = capacityBps, rate > c {
            // Not the limit, and more arrives than the last measure said: it carries more now.
            capacityBps = rate
        }
        if monitor.latenessNs < tuning.calmLatenessNs {
            catchingUpSinceSwitch = false
            if calmSinceNs == nil { calmSinceNs = nowNs }
        } else {
            calmSinceNs = nil
        }
    }

    /// What the path carries for video (bit/s): the capacity less what the other tracks take.
    public var videoBudgetBps: Double? {
        capacityBps.map { max(0, $0 - (monitor.otherRateBps() ?? 0)) }
    }

    /// What to do now.
    public func advise(nowNs: UInt64) -> Advice {
        let lateness = monitor.latenessNs
        let settled =
            nowNs >= Saturating.add(lastSwitchNs, catchingUpSinceSwitch ? tuning.maxSettleNs : tuning.settleNs)
        if let trial {
            if lateness >= tuning.trialLatenessNs { return .abandonTrial(reason: "current rendition fell behind") }
            if let behind = candidateLatenessNs, behind >= tuning.trialGiveUpNs,
                nowNs >= Saturating.add(trial.sinceNs, tuning.trialGraceNs)
            {
                return .abandonTrial(reason: "the next rendition does not keep up")
            }
            if nowNs >= Saturating.add(trial.sinceNs, tuning.trialTimeoutNs) {
                return .abandonTrial(reason: "no group boundary in time")
            }
            return .stay
        }
        // Within the settle time the new rung's lateness is its subscription's: it starts at its
        // current group's keyframe, whose frames arrive faster than real time.
        if current > 0, settled {
            let growth = monitor.latenessGrowthNs(overNs: tuning.overloadWindowNs) ?? 0
            let catchingUp = growth < -20_000_000
            let bitrate = currentRung.bitrate.map(Double.init)
            let overCapacity =
                monitor.saturated && bitrate != nil
                && videoBudgetBps.map { bitrate! > $0 * tuning.overCapacity } == true
            let overloaded =
                lateness >= tuning.overloadLatenessNs && growth >= Int64(clamping: tuning.overloadGrowthNs)
            if overloaded || overCapacity || (lateness >= tuning.downLatenessNs && !catchingUp) {
                var target = current - 1
                if let budget = videoBudgetBps, let within = ladder.highest(within: budget * tuning.targetShare) {
                    target = within
                }
                if target >= current {
                    // The capacity says it fits (a keyframe's burst, jitter): unless it is severe.
                    guard lateness >= tuning.severeLatenessNs, !catchingUp else { return .stay }
                    target = current - 1
                }
                let why =
                    "\(lateness / 1_000_000) ms behind (\(growth / 1_000_000) ms in \(tuning.overloadWindowNs / 1_000_000) ms), "
                    + "the path carries \(Self.kbps(videoBudgetBps)) kbit/s for video"
                return .down(to: target, reason: why)
            }
        }
        guard current < ladder.top, let calm = calmSinceNs, settled else { return .stay }
        let next = ladder.rungs.indices.first { $0 > current && !ladder.rungs[$0].stalled } ?? current + 1
        // A failed trial made the hold longer; the relay saying it could send the next rung with room
        // to spare (its PROBE report) brings the first hold back: the path may have grown since.
        var hold = upHoldNs
        if let probeBps, let b = ladder.rungs[next].bitrate,
            probeBps >= (Double(b) + (monitor.otherRateBps() ?? 0)) / tuning.targetShare
        {
            hold = min(hold, tuning.upHoldNs)
        }
        guard nowNs >= Saturating.add(calm, hold), nowNs >= Saturating.add(lastSwitchNs, hold) else { return .stay }
        // The path measured lately (a keyframe's burst saturates it every group on a tight path)
        // cannot carry the next rung: no trial until that measure is old.
        if let c = capacityBps, let at = capacityAtNs, nowNs < Saturating.add(at, tuning.capacityFreshNs),
            let b = ladder.rungs[next].bitrate, Double(b) + (monitor.otherRateBps() ?? 0) > c * tuning.targetShare
        {
            return .stay
        }
        // The relay's own estimate of what it sends us (cwnd over RTT) is near the current rate
        // while the current rung does not fill the path (its window grows no further): it says
        // nothing about the next rung. Below the current rung, the relay is struggling already.
        if let probeBps, let b = currentRung.bitrate, probeBps < Double(b) * 0.9 { return .stay }
        return .tryUp(to: next, reason: "calm for \((nowNs - calm) / 1_000_000) ms")
    }

    /// The pad subscribed the trial's rung.
    /// From now on ``observe(nowNs:bytes:newest:)`` counts the bytes of both subscriptions.
    public mutating func trialStarted(to rung: Int, nowNs: UInt64) {
        trial = (rung, nowNs)
        candidateLatenessNs = nil
        monitor.restartBytes()
    }

    /// A sample of the trial's candidate: its newest frame's timestamp (ns), measured against the
    /// playing track's best lead (renditions of one picture share timestamps); nil until its first
    /// group that starts after the trial began has arrived (what the subscription fetched of the
    /// group in progress says nothing about the path: the relay sends newer groups first).
    public mutating func observeTrial(nowNs: UInt64, newestTimestampNs: UInt64?) {
        guard trial != nil else { return }
        candidateLatenessNs = newestTimestampNs.map { monitor.latenessNs(nowNs: nowNs, newestTimestampNs: $0) }
    }

    /// The trial's rung has reached a group boundary where it could take over, its newest frame
    /// being `candidateNewestNs` now: whether both keep up there (measured now, not at the last
    /// sample: a candidate that has not caught up does not take over).
    public func trialKeepsUp(nowNs: UInt64, candidateNewestNs: UInt64) -> Bool {
        trial != nil && monitor.latenessNs < tuning.trialLatenessNs
            && monitor.latenessNs(nowNs: nowNs, newestTimestampNs: candidateNewestNs) < tuning.trialLatenessNs
    }

    /// The trial was abandoned. What arrived meanwhile (both rungs and the other tracks) is what
    /// the path carried with both asking for more: a capacity, which rules out the next trial of
    /// that rung for ``Tuning/capacityFreshNs`` (a path that grows is tried again after that).
    public mutating func trialFailed(nowNs: UInt64) {
        account(nowNs)
        if let rate = monitor.rateBps(all: true) {
            capacityBps = min(capacityBps ?? rate, rate)
            capacityAtNs = nowNs
        }
        trial = nil
        monitor.restartBytes()
        stats.trialsFailed += 1
        calmSinceNs = nil
        // What the trial's subscription had in flight (its burst fills a tight path's queue in
        // front of the rung that plays) still arrives: like after a switch, the rung is judged
        // again once it has caught up, or after ``Tuning/maxSettleNs``. Without this, a failed
        // trial under a cap that stays stepped the fitting rung down too (measured: mid → lo, then
        // a flap that doubled the hold and put the step up after the lift past 10 s).
        lastSwitchNs = nowNs
        catchingUpSinceSwitch = true
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
            capacityAtNs = nil
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
        catchingUpSinceSwitch = true
        monitor.restartBytes()
    }

    private mutating func account(_ nowNs: UInt64) {
        guard nowNs > accountedNs else { return }
        stats.timeOnRungNs[currentRung.name, default: 0] &+= nowNs - accountedNs
        accountedNs = nowNs
    }

    static func kbps(_ bps: Double?) -> String { bps.map { String(Int($0 / 1000)) } ?? "?" }
}

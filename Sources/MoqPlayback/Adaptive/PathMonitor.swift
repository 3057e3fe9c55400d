// SPDX-License-Identifier: MIT

/// What the path to the relay carries, as one track's arrivals tell it: sampled every ~100 ms
/// with the bytes received so far and the newest frame (its timestamp and arrival).
///
/// - **Lateness**: a frame that arrives on time has `timestamp − arrival` (its *lead*) at the best
///   seen lately; the newest frame due now has timestamp `now + bestLead`. How far the newest
///   frame received is behind that is the lateness: the time the path owes. It grows while the
///   path carries less than the track needs, and while nothing arrives at all.
/// - **Capacity**: while the path is the limit (late, or catching up: timestamps arriving faster
///   than real time), what arrives per second is what it carries. While it is not, the arrival
///   rate only says the path carries at least that much.
///
/// Bounded: a fixed number of samples whatever the peer sends.
public struct PathMonitor: Sendable {
    /// One sample.
    struct Sample: Sendable {
        var nowNs: UInt64
        var bytes: UInt64
        /// The other tracks of the session (audio), which share the path.
        var otherBytes: UInt64
        /// Everything the connection received (0: unknown): partial frames, retransmissions and
        /// what is still arriving for a subscription that ended count too.
        var wireBytes: UInt64
        var newestTimestampNs: UInt64?
        var latenessNs: UInt64
        /// The path was the limit when this sample was taken.
        var saturated: Bool
    }

    /// How long a lead is remembered as the best (ns): longer than any congestion it must see
    /// through, short enough for clocks that drift.
    public static let leadMemoryNs: UInt64 = 20_000_000_000
    /// The window a rate is measured over (ns).
    public static let rateWindowNs: UInt64 = 500_000_000
    /// The window a capacity is measured over (ns): short, so that a path that just shrank is
    /// measured before its queue holds seconds.
    public static let capacityWindowNs: UInt64 = 200_000_000
    /// Lateness above which the path counts as the limit (ns): above a frame's spacing and jitter.
    public static let saturatedLatenessNs: UInt64 = 80_000_000

    private var samples: [Sample] = []
    /// The newest frame's timestamp last known: a group whose first frame is still arriving (a
    /// keyframe) has no frame yet, and the track's newest is then unknown for a moment.
    private var lastNewestNs: UInt64?
    private static let maxSamples = 64
    /// The best lead per second of the memory (a ring of (second, lead)).
    private var leads: [(second: UInt64, leadNs: Int64)] = []
    private static let maxLeadBuckets = 24

    public init() {}

    /// Forgets everything (another track: its bytes count from 0 again). The best lead is kept:
    /// renditions of one picture share their timestamps.
    public mutating func restartBytes() {
        samples.removeAll()
    }

    /// Forgets the best lead too (another timeline).
    public mutating func reset() {
        samples.removeAll()
        lastNewestNs = nil
        leads.removeAll()
    }

    /// The best lead remembered (ns), if any frame arrived.
    public var bestLeadNs: Int64? { leads.map(\.leadNs).max() }

    /// Records a sample: `bytes` received in all on the track(s) measured, `otherBytes` on the
    /// session's other tracks (audio: they share the path), the newest frame's timestamp and
    /// arrival (ns, arrival on the monotonic clock of `nowNs`).
    public mutating func observe(
        nowNs: UInt64, bytes: UInt64, otherBytes: UInt64 = 0, wireBytes: UInt64 = 0,
        newest: (timestampNs: UInt64, arrivalNs: UInt64)?
    ) {
        if let newest {
            let lead = Saturating.subtract(Saturating.int64(newest.timestampNs), Saturating.int64(newest.arrivalNs))
            let second = newest.arrivalNs / 1_000_000_000
            if let last = leads.last, last.second == second {
                leads[leads.count - 1].leadNs = max(last.leadNs, lead)
            } else {
                leads.append((second, lead))
                if leads.count > Self.maxLeadBuckets { leads.removeFirst() }
            }
            let oldest = Saturating.minus(second, Self.leadMemoryNs / 1_000_000_000)
            leads.removeAll { $0.second < oldest }
        }
        if let ts = newest?.timestampNs { lastNewestNs = ts }
        let newestTs = lastNewestNs
        let lateness = latenessNs(nowNs: nowNs, newestTimestampNs: newestTs)
        var saturated = lateness >= Self.saturatedLatenessNs
        if let previous = samples.last, let ts = newestTs, let was = previous.newestTimestampNs,
            nowNs > previous.nowNs, ts > was
        {
            // Catching up: more than 1.5 s of media arrived per second (a cached backlog sent at once).
            saturated = saturated || (ts - was) * 2 > (nowNs - previous.nowNs) * 3
        }
        samples.append(
            Sample(
                nowNs: nowNs, bytes: bytes, otherBytes: otherBytes, wireBytes: wireBytes, newestTimestampNs: newestTs,
                latenessNs: lateness,
                saturated: saturated))
        if samples.count > Self.maxSamples { samples.removeFirst() }
    }

    /// How far the newest frame is behind the one due now (ns); 0 before anything is known.
    public var latenessNs: UInt64 { samples.last?.latenessNs ?? 0 }

    func latenessNs(nowNs: UInt64, newestTimestampNs: UInt64?) -> UInt64 {
        guard let best = bestLeadNs, let newest = newestTimestampNs else { return 0 }
        let due = Saturating.add(Saturating.int64(nowNs), best)
        return Saturating.unsigned(Saturating.subtract(due, Saturating.int64(newest)))
    }

    /// The arrival rate over the last `windowNs` (bit/s), if the samples span it: of the track(s)
    /// measured, or (`all`) of everything the connection received (the tracks' when unknown).
    public func rateBps(windowNs: UInt64 = PathMonitor.rateWindowNs, all: Bool = false) -> Double? {
        guard let last = samples.last,
            let first = samples.last(where: { last.nowNs >= $0.nowNs &+ windowNs }),
            last.bytes >= first.bytes, last.otherBytes >= first.otherBytes, last.nowNs > first.nowNs
        else { return nil }
        var bytes = last.bytes - first.bytes
        if all {
            if first.wireBytes > 0, last.wireBytes >= first.wireBytes {
                bytes = last.wireBytes - first.wireBytes
            } else {
                bytes &+= last.otherBytes - first.otherBytes
            }
        }
        return Double(bytes) * 8 / (Double(last.nowNs - first.nowNs) / 1e9)
    }

    /// The other tracks' rate (bit/s) over the last `windowNs`.
    public func otherRateBps(windowNs: UInt64 = PathMonitor.rateWindowNs) -> Double? {
        guard let last = samples.last,
            let first = samples.last(where: { last.nowNs >= $0.nowNs &+ windowNs }),
            last.otherBytes >= first.otherBytes, last.nowNs > first.nowNs
        else { return nil }
        return Double(last.otherBytes - first.otherBytes) * 8 / (Double(last.nowNs - first.nowNs) / 1e9)
    }

    /// What the path carries for the whole session (bit/s), measured when it was the limit for the
    /// whole last ``capacityWindowNs``; nil otherwise.
    public var capacitySampleBps: Double? {
        guard let last = samples.last, last.saturated else { return nil }
        let window = samples.filter { last.nowNs < $0.nowNs &+ Self.capacityWindowNs }
        guard window.allSatisfy(\.saturated) else { return nil }
        return rateBps(windowNs: Self.capacityWindowNs, all: true)
    }

    /// How much the lateness grew since the sample about `agoNs` before the last (ns; negative:
    /// it shrank, the path is catching up). Nil without such a sample.
    public func latenessGrowthNs(overNs agoNs: UInt64) -> Int64? {
        guard let last = samples.last, let then = samples.last(where: { last.nowNs >= $0.nowNs &+ agoNs }) else {
            return nil
        }
        return Saturating.subtract(Saturating.int64(last.latenessNs), Saturating.int64(then.latenessNs))
    }

    /// Whether the path was the limit at the last sample.
    public var saturated: Bool { samples.last?.saturated ?? false }
}

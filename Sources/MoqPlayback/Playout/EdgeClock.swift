// SPDX-License-Identifier: MIT

/// Where the live edge is now, on the publisher's clock: the broadcast's timestamps related to
/// this machine's monotonic clock by the frames that arrived soonest after their capture.
///
/// Every frame received gives a sample `timestamp − arrival`; a frame at the live edge gives the
/// largest (it waited nowhere but on the path), a frame of a cached backlog a smaller one (it was
/// old when it left the relay). The estimate is the largest sample of the last few seconds
/// (``windowNs``), so it follows a path that got slower without holding on to a faster past.
/// `now + lead` is then the newest timestamp the network could have delivered by `now`.
///
/// **Settling.** A viewer who joins a running broadcast first receives a burst: the relay's
/// cached frames of the current group, all at once. While they arrive each new sample is larger
/// than the last by about a frame's duration; once the burst is over, samples stop rising (the
/// next frame arrives one frame's duration after the previous one). The estimate is *settled*
/// when a new sample raised it by at most ``settleToleranceNs`` (audio delivered newest first
/// settles at its second frame). Every track of a broadcast feeds one estimator: they share the
/// publisher's clock.
public struct EdgeClock: Sendable, Equatable {
    /// How long a sample counts (ns).
    public static let windowNs: UInt64 = 3_000_000_000
    /// The buckets the window is kept in (the largest sample of each).
    static let bucketNs: UInt64 = 500_000_000
    /// A new sample that raises the estimate by no more than this means frames arrive at the
    /// pace they are captured: the backlog is over.
    public static let settleToleranceNs: Int64 = 5_000_000

    /// (bucket start, largest sample) pairs, oldest first.
    private var buckets: [(start: UInt64, lead: Int64)] = []
    /// The largest sample ever seen, for when the window has emptied (a stall).
    private var lastLead: Int64?
    /// Distinct samples seen since the last reset.
    public private(set) var samples = 0
    /// Whether the last new sample confirmed the estimate (see the type's doc).
    public private(set) var settled = false

    public init() {}

    public static func == (a: EdgeClock, b: EdgeClock) -> Bool {
        a.lastLead == b.lastLead && a.samples == b.samples && a.settled == b.settled
            && a.buckets.elementsEqual(b.buckets) { $0.start == $1.start && $0.lead == $1.lead }
    }

    /// A frame with timestamp `timestampNs` (publisher clock) arrived at `arrivalNs` (monotonic).
    /// The caller passes each frame once (the same frame seen twice would settle the estimate).
    public mutating func observe(timestampNs: UInt64, arrivalNs: UInt64, now: UInt64) {
        let sample = Saturating.subtract(Saturating.int64(timestampNs), Saturating.int64(arrivalNs))
        let before = lead(now: now)
        samples += 1
        if let before {
            settled = Saturating.subtract(sample, before) <= Self.settleToleranceNs
        }
        let start = arrivalNs - arrivalNs % Self.bucketNs
        if let last = buckets.last, last.start == start {
            buckets[buckets.count - 1].lead = max(last.lead, sample)
        } else if let last = buckets.last, last.start > start {
            // An arrival older than the newest bucket (clocks read on other threads): fold it in.
            buckets[buckets.count - 1].lead = max(last.lead, sample)
        } else {
            buckets.append((start, sample))
        }
        lastLead = max(lastLead ?? sample, sample)
        expire(now: now)
        if let current = lead(now: now) { lastLead = current }
    }

    /// The estimate at `now`: the largest sample of the window (the last one known when the
    /// window is empty); nil before any sample.
    public func lead(now: UInt64) -> Int64? {
        let horizon = now > Self.windowNs ? now - Self.windowNs : 0
        var best: Int64?
        for bucket in buckets where Saturating.add(bucket.start, Self.bucketNs) > horizon {
            best = max(best ?? bucket.lead, bucket.lead)
        }
        return best ?? lastLead
    }

    /// The publisher timestamp (ns) of the live edge at `now`.
    public func edgeNs(now: UInt64) -> UInt64? {
        guard let lead = lead(now: now) else { return nil }
        let edge = Saturating.add(Saturating.int64(now), lead)
        return edge < 0 ? 0 : UInt64(edge)
    }

    /// Forgets everything (another publisher's clock follows).
    public mutating func reset() { self = EdgeClock() }

    private mutating func expire(now: UInt64) {
        let horizon = now > Self.windowNs ? now - Self.windowNs : 0
        while let first = buckets.first, Saturating.add(first.start, Self.bucketNs) <= horizon, buckets.count > 1 {
            buckets.removeFirst()
        }
        // A bounded list whatever the clock does: at most a window's worth of buckets.
        let limit = Int(Self.windowNs / Self.bucketNs) + 2
        if buckets.count > limit { buckets.removeFirst(buckets.count - limit) }
    }
}

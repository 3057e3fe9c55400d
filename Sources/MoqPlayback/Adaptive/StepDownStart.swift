// SPDX-License-Identifier: MIT

/// Where a step down starts on the lower rendition: its group in progress, or its next group.
///
/// A new subscription gets the rendition's group in progress from its keyframe, as fast as the
/// relay can send it. That group's frames up to the last one shown are only decoded, and they
/// cross the path that has just been found too narrow: their backlog queues in front of
/// everything else on it (audio too) until the surplus left by the lower rung has drained it.
/// When the group in progress started long ago and the next one is due soon, waiting for the
/// next one costs a shorter freeze of the picture than that backlog costs, and nothing else on
/// the path waits: the pad then stops the stale group (STOP_SENDING) and starts at the next.
public struct StepDownStart: Sendable, Equatable {
    /// The last frame shown from the previous rendition (µs).
    public var lastShownUs: UInt64
    /// How long the previous rendition's groups last (µs), when known: renditions of a ladder
    /// share their group boundaries.
    public var groupDurationUs: UInt64?
    /// The lower rendition's bitrate (bit/s), when the catalog says.
    public var bitrateBps: Double?
    /// What the path carries for video, as last measured (bit/s).
    public var budgetBps: Double?

    /// A group this close to the last frame shown is fetched whatever comes next (µs): a few frames.
    public static let reachUs: UInt64 = 250_000
    /// The longest wait for the next group that is ever chosen (µs).
    public static let maxWaitUs: UInt64 = 1_500_000

    public init(lastShownUs: UInt64, groupDurationUs: UInt64?, bitrateBps: Double?, budgetBps: Double?) {
        self.lastShownUs = lastShownUs
        self.groupDurationUs = groupDurationUs
        self.bitrateBps = bitrateBps
        self.budgetBps = budgetBps
    }

    /// The time (µs) the backlog of a group that started `elapsedUs` before the last frame shown
    /// keeps the path busy: it is delivered with what the lower rung leaves of the budget. Without
    /// measures, twice its span (a rung chosen at 80 % of the budget leaves a quarter of itself).
    func catchUpUs(elapsedUs: UInt64) -> UInt64 {
        guard let bitrate = bitrateBps, let budget = budgetBps, bitrate > 0, budget > 0 else {
            return Saturating.add(elapsedUs, elapsedUs)
        }
        let surplus = max(budget - bitrate, 0.1 * bitrate)
        let us = Double(elapsedUs) * bitrate / surplus
        return us >= 1e15 ? UInt64(1e15) : UInt64(us)
    }

    /// Whether the lower rendition's group that starts at `groupStartUs` (its first frame read
    /// after the switch) is left for the next one.
    public func waitsForNextGroup(groupStartUs: UInt64) -> Bool {
        guard let duration = groupDurationUs, duration > 0, lastShownUs > groupStartUs else { return false }
        let elapsed = lastShownUs - groupStartUs
        guard elapsed > Self.reachUs, elapsed < duration else { return false }
        let wait = duration - elapsed
        return wait <= Self.maxWaitUs && wait < catchUpUs(elapsedUs: elapsed)
    }
}

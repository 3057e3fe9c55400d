// SPDX-License-Identifier: MIT
import MoqWire

/// Where a trial's subscription to a higher rung starts: at that rung's **next** group, not the one
/// in progress.
///
/// A subscription starts at its track's group in progress, fetched from its keyframe: for a trial
/// that is a burst of up to a group of the higher rung that the trial never plays (it takes over at
/// a group that starts after it began), sent as fast as the relay's congestion window allows, which
/// on a tight path fills the bottleneck's queue in front of the rung that plays and the audio
/// (measured: a 300–700 ms stall under a cap that stays). moq-lite-06 has no "next group" start, but
/// it has a floor (`group_start`): the trial asks for the group after the one the playing rung is
/// in, translated to the other rung's numbering.
///
/// The renditions of a ladder start their groups at the same frames (moqsink asks every encoder
/// for keyframes at the same running times), and a publisher that starts them together numbers
/// them alike; where they differ, the difference is learnt from the first group of each trial
/// (the groups of both rungs that start at the same timestamp). A floor that named a group that
/// never came (numberings that differ, not yet learnt) turns floors off for the rest of the
/// playback: a trial then starts at the group in progress, as before.
public struct TrialStart: Sendable, Equatable {
    /// For each rung (by track name), how far its group numbers run ahead of a common reference.
    private var bias: [String: Int64] = [:]
    /// A floor named a group that did not come: no more floors.
    public private(set) var disabled = false

    public init() {}

    /// The floor for a trial of `rung` while `playing` plays its group `sequence`: the next group,
    /// in `rung`'s numbering. Nil when floors are off, or the number would not be a varint.
    public func floor(for rung: String, playing: String, sequence: UInt64) -> UInt64? {
        guard !disabled, sequence < VarInt.max else { return nil }
        let offset = (bias[rung] ?? 0) - (bias[playing] ?? 0)
        let (next, overflow) = Int64(sequence + 1).addingReportingOverflow(offset)
        guard !overflow, next >= 0, UInt64(next) <= VarInt.max else { return nil }
        return UInt64(next)
    }

    /// A trial's first group (`sequence`) starts at the same timestamp as the playing rung's group
    /// `playingSequence`: the two numberings are learnt.
    public mutating func learn(
        rung: String, sequence: UInt64, playing: String, playingSequence: UInt64
    ) {
        guard sequence <= VarInt.max, playingSequence <= VarInt.max else { return }
        // Both below 2^62: the difference and the sum fit in an Int64.
        let base = bias[playing] ?? 0
        let (value, overflow) = base.addingReportingOverflow(Int64(sequence) - Int64(playingSequence))
        guard !overflow else { return }
        bias[rung] = value
    }

    /// A trial with a floor ended without any group of its rung: the floor was wrong.
    public mutating func floorFailed() { disabled = true }
}

// SPDX-License-Identifier: MIT
import MoqWire

/// Where a reader of a track stands, kept across subscriptions (a reconnect, a GOAWAY handover,
/// a failover to another relay), so that a resubscription that repeats what was delivered is
/// recognised frame by frame and nothing is delivered twice.
///
/// A resubscription asks for the same latency budget as before, not for a floor at the next
/// group: the relay (or the publisher) then starts at the oldest cached group within the budget,
/// which covers an outage shorter than the budget, and the repeats are skipped here. A floor
/// (`group_start`) would be cheaper on the wire but waits forever behind a publisher that
/// restarted, whose groups count from 0 again (moqsink and moq-dev's publishers alike).
///
/// A frame at or before the position is a repeat when its timestamp is not newer than the last
/// one delivered and not older by more than ``timelineTolerance`` (groups are cut on the same
/// media clock); a frame that goes back further, or forward in time with a lower position, comes
/// from a new timeline (a restarted publisher) and starts over from there. So a publisher that
/// restarts less than the tolerance after it started has its first frames taken for repeats
/// until it passes the old position (at most the tolerance's worth).
public struct ResumePosition: Sendable {
    /// The last frame delivered: group, index within it, timestamp (track timescale).
    public private(set) var last: (group: UInt64, index: UInt64, timestamp: UInt64)?
    /// How far back in time (track timescale) a repeat may start: at least the latency budget
    /// of the resubscription, which is how far back the relay starts it.
    public var timelineTolerance: UInt64
    /// Frames recognised as repeats so far.
    public private(set) var repeats: UInt64 = 0
    /// New timelines recognised so far (a restarted publisher).
    public private(set) var restarts: UInt64 = 0

    /// - Parameter timelineTolerance: how far back a repeated frame's timestamp may be, in the
    ///   track's timescale (2 s at moqsink's µs timescale by default): at least the budget of the
    ///   resubscription, since that is how far back it starts.
    public init(timelineTolerance: UInt64 = 2_000_000) {
        self.timelineTolerance = timelineTolerance
    }

    /// Whether the frame at `index` of `group` with `timestamp` should be delivered; records it
    /// when it is.
    public mutating func admit(group: UInt64, index: UInt64, timestamp: UInt64) -> Bool {
        if let last {
            let atOrBefore = group < last.group || (group == last.group && index <= last.index)
            if atOrBefore {
                let sameTimeline = timestamp <= last.timestamp && last.timestamp - timestamp <= timelineTolerance
                if sameTimeline {
                    repeats = VarInt.saturatingAdd(repeats, 1)
                    return false
                }
                restarts = VarInt.saturatingAdd(restarts, 1)
            }
        }
        last = (group, index, timestamp)
        return true
    }
}

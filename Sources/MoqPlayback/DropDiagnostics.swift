// SPDX-License-Identifier: MIT

/// Where media was discarded (moq-kit's `DropStage`; the stages this player has). The raw values
/// are what moqsrc's `moq-drop` messages carry.
public enum DropStage: String, Sendable, CaseIterable {
    /// Between the publisher and the reader.
    case transport
    /// The playout's decision against the timeline.
    case timeline
}

/// Why media was discarded (moq-kit's `DropReason` names, plus ``catchUp``), in kebab-case as
/// moqsrc's `moq-drop` messages carry them.
public enum DropReason: String, Sendable, CaseIterable {
    /// Groups missing from the sequence: evicted, over the latency budget or never sent.
    case missingSequence = "missing-sequence"
    /// A frame the player cannot read.
    case invalidPayload = "invalid-payload"
    /// Too late for playback, with a newer group available.
    case staleVsPlayback = "stale-vs-playback"
    /// Already played before a resubscription.
    case covered
    /// The rest of a group whose start was dropped: it cannot decode.
    case latencyBudgetSkip = "latency-budget-skip"
    /// Dropped at a quiet moment to return to the target latency after a stall (not in moq-kit).
    case catchUp = "catch-up"

    /// The reason of a playout drop; nil for frames before the join point (not a loss).
    public init?(_ drop: PlayoutDrop) {
        switch drop {
        case .beforeJoin: return nil
        case .late: self = .staleVsPlayback
        case .repeated: self = .covered
        case .restOfGroup: self = .latencyBudgetSkip
        case .catchUp: self = .catchUp
        }
    }
}

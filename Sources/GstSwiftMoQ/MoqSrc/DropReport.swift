// SPDX-License-Identifier: MIT
import GstSupport
import MoqCatalog
import MoqPlayback

/// Where a frame that was not played was discarded, and why, as moq-kit's diagnostics name them
/// (`DropStage`, `DropReason`, kebab-case): the fields of a `moq-drop` element message, which
/// moqsrc posts for each discard while its `diagnostics` property is on.
struct DropReport {
    enum Stage: String {
        /// Between the publisher and the reader: groups that never arrived or arrived unreadable.
        case transport
        /// The playout's decision against the timeline: too late, already played, catching up.
        case timeline
    }

    enum Reason: String {
        /// Groups missing from the sequence (skipped by the reader: evicted, over budget, never sent).
        case missingSequence = "missing-sequence"
        /// A frame that is not a legacy frame.
        case invalidPayload = "invalid-payload"
        /// Too late for playback, with a newer group here.
        case staleVsPlayback = "stale-vs-playback"
        /// Already played before a resubscription.
        case covered
        /// The rest of a group whose start was dropped (it cannot decode).
        case latencyBudgetSkip = "latency-budget-skip"
        /// Dropped at a quiet moment to return to the target latency after a stall (moqsrc's `catch-up`).
        case catchUp = "catch-up"
    }

    var stage: Stage
    var reason: Reason
    var kind: MediaKind
    var track: String
    var ptsUs: UInt64?
    var group: UInt64?
    var count: UInt64 = 1
    var bytes: UInt64 = 0

    /// The report of a playout drop (nil for frames before the join point: not a loss).
    init?(_ drop: PlayoutDrop, kind: MediaKind, track: String, ptsUs: UInt64?, group: UInt64, bytes: Int) {
        let reason: Reason
        switch drop {
        case .beforeJoin: return nil
        case .late: reason = .staleVsPlayback
        case .repeated: reason = .covered
        case .restOfGroup: reason = .latencyBudgetSkip
        case .catchUp: reason = .catchUp
        }
        self.init(
            stage: .timeline, reason: reason, kind: kind, track: track, ptsUs: ptsUs, group: group,
            bytes: UInt64(bytes))
    }

    init(
        stage: Stage, reason: Reason, kind: MediaKind, track: String, ptsUs: UInt64? = nil, group: UInt64? = nil,
        count: UInt64 = 1, bytes: UInt64 = 0
    ) {
        self.stage = stage
        self.reason = reason
        self.kind = kind
        self.track = track
        self.ptsUs = ptsUs
        self.group = group
        self.count = count
        self.bytes = bytes
    }

    /// The message's fields.
    var fields: [(String, FieldValue)] {
        var f: [(String, FieldValue)] = [
            ("kind", .string(kind.rawValue)), ("track", .string(track)), ("stage", .string(stage.rawValue)),
            ("reason", .string(reason.rawValue)), ("count", .uint64(count)), ("bytes", .uint64(bytes)),
        ]
        if let ptsUs { f.append(("pts-us", .uint64(ptsUs))) }
        if let group { f.append(("group", .uint64(group))) }
        return f
    }
}

extension PlayerEvents {
    /// Posts `moq-drop` (the caller checks moqsrc's `diagnostics`).
    func post(_ drop: DropReport) { reporter.elementMessage(makeStructure("moq-drop", drop.fields)) }
}

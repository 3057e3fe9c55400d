// SPDX-License-Identifier: MIT
import GstSupport
import MoqCatalog
import MoqPlayback

/// Where a frame that was not played was discarded, and why, as moq-kit's diagnostics name them
/// (`DropStage`, `DropReason`, kebab-case): the fields of a `moq-drop` element message, which
/// moqsrc posts for each discard while its `diagnostics` property is on.
struct DropReport {
    var stage: DropStage
    var reason: DropReason
    var kind: MediaKind
    var track: String
    var ptsUs: UInt64?
    var group: UInt64?
    var count: UInt64 = 1
    var bytes: UInt64 = 0

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

extension DropReport {
    /// The report of a playout drop (nil for frames before the join point: not a loss).
    init?(_ drop: PlayoutDrop, kind: MediaKind, track: String, ptsUs: UInt64?, group: UInt64, bytes: Int) {
        guard let reason = DropReason(drop) else { return nil }
        self.init(
            stage: .timeline, reason: reason, kind: kind, track: track, ptsUs: ptsUs, group: group,
            bytes: UInt64(bytes))
    }
}

extension PlayerEvents {
    /// Posts `moq-drop` (the caller checks moqsrc's `diagnostics`).
    func post(_ drop: DropReport) { reporter.elementMessage(makeStructure("moq-drop", drop.fields)) }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog

/// Posts moq-kit's player events as element messages: the structure's name is the
/// event's name (`track.ready`, `playback.start`, `track.stall.start`, `track.stall.end`,
/// `rebuffer.start`, `rebuffer.end`, `track.switch`, `decode.error`), its fields the
/// payload in kebab-case (`kind`, `track`, then the event's own).
struct PlayerEvents: @unchecked Sendable {
    let reporter: ElementReporter

    /// Posts `name` about a track.
    func post(_ name: String, kind: MediaKind, track: String, _ fields: [(String, FieldValue)]) {
        post(name, [("kind", .string(kind.rawValue)), ("track", .string(track))] + fields)
    }

    /// Posts `name` with `fields`.
    func post(_ name: String, _ fields: [(String, FieldValue)]) {
        reporter.log(GST_LEVEL_INFO, "event \(name)")
        reporter.elementMessage(makeStructure(name, fields))
    }
}

// SPDX-License-Identifier: MIT
public import MoqCatalog
public import MoqMedia

/// The renditions to play from a catalog: one video and one audio, by name when asked
/// for, else the first playable of each kind (catalog order, like moq-kit's default).
public struct RenditionChoice: Sendable, Equatable {
    /// The video rendition to play, if any.
    public var video: PlayableRendition?
    /// The audio rendition to play, if any.
    public var audio: PlayableRendition?
    /// Every playable rendition (the stream collection).
    public var playable: [PlayableRendition]
    /// Why other renditions are not played (unsupported codec, malformed…).
    public var skipped: [SkippedRendition]
    /// Requests that could not be met, worded for the user.
    public var notes: [String]
    /// The kinds asked for by a name the catalog does not list as playable, each with its note
    /// (what is chosen instead is in ``video`` / ``audio``).
    public var missing: [MediaKind: String]

    /// A preference value that plays no rendition of that kind.
    public static let none = "none"

    /// Chooses from `catalog`.
    /// - Parameters:
    ///   - video: a video track name, ``none``, or nil for the first playable.
    ///   - audio: an audio track name, ``none``, or nil for the first playable.
    public init(catalog: HangCatalog, video: String?, audio: String?) {
        let (playable, skipped) = MediaFormat.playable(in: catalog)
        self.playable = playable
        self.skipped = skipped
        var missing: [MediaKind: String] = [:]
        func pick(_ kind: MediaKind, _ wanted: String?) -> PlayableRendition? {
            let candidates = playable.filter { $0.rendition.config.kind == kind }
            guard let wanted, !wanted.isEmpty else { return candidates.first }
            if wanted == Self.none { return nil }
            if let match = candidates.first(where: { $0.rendition.name == wanted }) { return match }
            let names = candidates.map(\.rendition.name)
            let fallback = candidates.first
            missing[kind] =
                "\(kind)-track \"\(wanted)\" is not a playable \(kind) rendition of the catalog "
                + "(playable: \(names.isEmpty ? "none" : names.joined(separator: ", ")))"
                + (fallback.map { "; playing \"\($0.rendition.name)\"" } ?? "")
            return fallback
        }
        self.video = pick(.video, video)
        self.audio = pick(.audio, audio)
        self.missing = missing
        self.notes = [MediaKind.video, .audio].compactMap { missing[$0] }
    }
}

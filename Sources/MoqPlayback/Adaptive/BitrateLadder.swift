// SPDX-License-Identifier: MIT
import MoqCatalog
public import MoqMedia

/// What a viewer allows adaptive bitrate to choose from: renditions larger or dearer than this
/// are left out (a small window, a metered link). Zero fields are no limit.
public struct RenditionCap: Sendable, Equatable {
    /// Coded width and height at most (pixels; 0: any).
    public var maxWidth: UInt32
    public var maxHeight: UInt32
    /// The catalog's bitrate at most (bit/s; 0: any).
    public var maxBitrate: UInt64

    public init(maxWidth: UInt32 = 0, maxHeight: UInt32 = 0, maxBitrate: UInt64 = 0) {
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.maxBitrate = maxBitrate
    }

    /// No limit.
    public static let none = RenditionCap()

    /// `WIDTHxHEIGHT` (either may be 0), as moqsrc's `max-resolution` takes it; nil if malformed.
    public static func resolution(_ text: String) -> (width: UInt32, height: UInt32)? {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = UInt32(parts[0]), let h = UInt32(parts[1]) else { return nil }
        return (w, h)
    }
}

/// The video renditions of one catalog section that are versions of one picture at different
/// bitrates (a transcode or simulcast ladder), lowest first: what adaptive bitrate moves along.
///
/// hang has no field that says "same source": its `video` section is the grouping, and moq-dev's
/// players rank every rendition in it. A section can also hold different pictures (our
/// multi-camera recipe publishes one camera per rendition), which must never be switched between
/// on their own. So a section is a ladder only when its renditions can be told apart by cost:
/// every one has a distinct catalog `bitrate`, or (none having one) a distinct coded size, and
/// they share a codec family. Anything else is not a ladder (``init(_:cap:)`` returns nil).
public struct BitrateLadder: Sendable, Equatable {
    /// One rendition of the ladder.
    public struct Rung: Sendable, Equatable {
        /// The playable rendition (track name, config, caps).
        public var playable: PlayableRendition
        /// The catalog's bitrate (bit/s), if it gave one.
        public var bitrate: UInt64?
        public var width: UInt32?
        public var height: UInt32?
        /// The publisher asks players to avoid it for now (hang's `stalled`).
        public var stalled: Bool

        public var name: String { playable.rendition.name }
        /// Pixels per frame (0 when unknown).
        public var area: UInt64 { UInt64(width ?? 0) * UInt64(height ?? 0) }
    }

    /// Lowest (cheapest) first.
    public let rungs: [Rung]

    /// The ladder of `playable`'s video renditions within `cap`, or nil when they are not one (fewer
    /// than two, renditions that cannot be ranked, several pictures). Renditions above the cap are
    /// left out, but the lowest always stays (something must play).
    public init?(_ playable: [PlayableRendition], cap: RenditionCap = .none) {
        var all: [Rung] = []
        for p in playable {
            guard case .video(let v) = p.rendition.config else { continue }
            all.append(
                Rung(
                    playable: p, bitrate: v.bitrate.flatMap { $0 > 0 ? $0 : nil }, width: v.codedWidth,
                    height: v.codedHeight, stalled: v.stalled ?? false))
        }
        guard all.count >= 2 else { return nil }
        let families = Set(all.map { Self.family($0.playable.rendition.config) })
        guard families.count == 1 else { return nil }
        let byBitrate = all.allSatisfy { $0.bitrate != nil }
        if byBitrate {
            guard Set(all.compactMap(\.bitrate)).count == all.count else { return nil }
            all.sort { ($0.bitrate ?? 0, $0.area) < ($1.bitrate ?? 0, $1.area) }
        } else {
            guard all.allSatisfy({ $0.area > 0 }), Set(all.map(\.area)).count == all.count else { return nil }
            all.sort { $0.area < $1.area }
        }
        var kept = all.filter { Self.fits($0, cap) }
        if kept.isEmpty { kept = [all[0]] }
        rungs = kept
    }

    /// Whether the rungs are ranked by their catalog bitrates (else by size only).
    public var knowsBitrates: Bool { rungs.allSatisfy { $0.bitrate != nil } }

    /// The rung named `name`.
    public func index(of name: String) -> Int? { rungs.firstIndex { $0.name == name } }

    /// The highest rung whose bitrate is at most `bps` (the lowest if none is), skipping stalled
    /// ones unless nothing else is left; nil when the rungs have no bitrates.
    public func highest(within bps: Double) -> Int? {
        guard knowsBitrates else { return nil }
        let usable = rungs.indices.filter { !rungs[$0].stalled }
        let pool = usable.isEmpty ? Array(rungs.indices) : usable
        return pool.last { Double(rungs[$0].bitrate ?? 0) <= bps } ?? pool.first
    }

    /// The highest rung not marked stalled (the top if all are).
    public var top: Int { rungs.indices.last { !rungs[$0].stalled } ?? rungs.count - 1 }

    static func fits(_ rung: Rung, _ cap: RenditionCap) -> Bool {
        if cap.maxBitrate > 0, let b = rung.bitrate, b > cap.maxBitrate { return false }
        if cap.maxWidth > 0, let w = rung.width, w > cap.maxWidth { return false }
        if cap.maxHeight > 0, let h = rung.height, h > cap.maxHeight { return false }
        return true
    }

    /// `avc1`/`avc3` are one family (H.264), as are `hev1`/`hvc1`: what one decoder plays.
    static func family(_ config: RenditionConfig) -> String {
        guard case .video(let v) = config else { return "" }
        let prefix = v.codec.split(separator: ".").first.map(String.init) ?? v.codec
        switch prefix {
        case "avc1", "avc3": return "h264"
        case "hev1", "hvc1": return "h265"
        default: return prefix
        }
    }
}

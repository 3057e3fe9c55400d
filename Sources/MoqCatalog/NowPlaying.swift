// SPDX-License-Identifier: MIT
import MoqWire

/// What is playing (title, artist, album, duration, artwork), as SwiftMoQ carries it: a track of
/// the broadcast (``trackName``, named in the catalog's `swiftmoq` member) whose every group is one
/// JSON object, the newest group being the current item.
///
/// Why a track of JSON objects and not a catalog field: the catalog is republished whole on every
/// change and kept small (players re-parse it), while artwork is large and changes with the item;
/// a track keeps them apart, a late joiner gets the newest group at once, and any MoQ client can
/// read it. JSON because every player (browsers too) reads it without a codec:
/// `{"title": "…", "artist": "…", "album": "…", "durationMs": 215000,
///   "artwork": {"mimeType": "image/png", "data": "<base64>"}}`.
public struct NowPlaying: Sendable, Equatable {
    /// An image of the item.
    public struct Artwork: Sendable, Equatable {
        /// `image/png`, `image/jpeg`…
        public var mimeType: String
        /// The encoded image.
        public var data: [UInt8]

        /// - Parameters: see the properties.
        public init(mimeType: String, data: [UInt8]) {
            self.mimeType = mimeType
            self.data = data
        }
    }

    public var title: String?
    public var artist: String?
    public var album: String?
    /// The item's length, when known.
    public var durationMs: UInt64?
    public var artwork: Artwork?

    /// - Parameters: see the properties.
    public init(
        title: String? = nil, artist: String? = nil, album: String? = nil, durationMs: UInt64? = nil,
        artwork: Artwork? = nil
    ) {
        self.title = title
        self.artist = artist
        self.album = album
        self.durationMs = durationMs
        self.artwork = artwork
    }

    /// The track's default name.
    public static let trackName = "now-playing"
    /// Largest artwork carried (a bigger image is left out): 512 KiB.
    public static let maxArtworkBytes = 512 << 10
    /// Largest document read from a peer.
    public static let limits = CatalogLimits(maxBytes: 1 << 20, maxDepth: 4, maxRenditions: 0)
    /// Longest text field kept (a longer one is cut).
    public static let maxTextBytes = 1024

    /// True when nothing is known.
    public var isEmpty: Bool { self == NowPlaying() }

    /// The JSON object, one group's frame.
    public func jsonBytes() -> [UInt8] {
        var entries: [(key: String, value: JSONValue)] = []
        if let title { entries.append(("title", .string(title))) }
        if let artist { entries.append(("artist", .string(artist))) }
        if let album { entries.append(("album", .string(album))) }
        if let durationMs { entries.append(("durationMs", .number(JSONNumber(durationMs)))) }
        if let artwork, artwork.data.count <= Self.maxArtworkBytes {
            entries.append(
                (
                    "artwork",
                    .object(
                        JSONObject([
                            ("mimeType", .string(artwork.mimeType)),
                            ("data", .string(Base64.encode(Bytes(artwork.data)))),
                        ]))
                ))
        }
        return Array(JSONValue.object(JSONObject(entries)).jsonString.utf8)
    }

    /// Reads one frame from a peer: fields of the wrong type, over-long text and over-large or
    /// undecodable artwork are left out; only a document that is not a JSON object is an error.
    public init(json bytes: some Collection<UInt8>) throws(CatalogError) {
        guard case .object(let object) = try JSONValue(parsing: bytes, limits: Self.limits) else {
            throw .wrongType(path: "$", expected: "object", found: "other")
        }
        func text(_ key: String) -> String? {
            guard case .string(let s)? = object[key] else { return nil }
            guard s.utf8.count > Self.maxTextBytes else { return s }
            // Cut at a character boundary.
            var cut = ""
            for character in s {
                if cut.utf8.count + character.utf8.count > Self.maxTextBytes { break }
                cut.append(character)
            }
            return cut
        }
        var artwork: Artwork?
        if case .object(let art)? = object["artwork"], case .string(let mime)? = art["mimeType"],
            case .string(let encoded)? = art["data"], encoded.utf8.count <= (Self.maxArtworkBytes / 3 + 1) * 4,
            let data = Base64.decode(encoded), data.count <= Self.maxArtworkBytes, mime.utf8.count <= 128
        {
            artwork = Artwork(mimeType: mime, data: data)
        }
        var duration: UInt64?
        if case .number(let n)? = object["durationMs"] { duration = n.uint64Value }
        self.init(
            title: text("title"), artist: text("artist"), album: text("album"), durationMs: duration, artwork: artwork)
    }
}

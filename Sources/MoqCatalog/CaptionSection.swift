// SPDX-License-Identifier: MIT

/// The `captions` section: timed text tracks (WebVTT cues as UTF-8) beside the media.
///
/// Each rendition's frames are hang legacy frames whose payload is one cue's text; a group is one
/// cue, and a second, empty frame (when the publisher knew the cue's duration) marks its end. A
/// player that does not know the section ignores it (hang decoders ignore unknown members).
public struct CaptionSection: Sendable, Equatable {
    /// Renditions keyed by track name.
    public var renditions: [String: CaptionConfig]
    /// Members not modelled above, in received order.
    public var extra: JSONObject

    /// An empty section.
    public init() {
        renditions = [:]
        extra = JSONObject()
    }

    /// The first rendition by track name (what a player shows unless told otherwise).
    public var first: (name: String, config: CaptionConfig)? {
        renditions.keys.min { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { ($0, renditions[$0]!) }
    }
}

/// One caption rendition.
public struct CaptionConfig: Sendable, Equatable {
    /// The codec: `wvtt` (WebVTT cue text, UTF-8).
    public var codec: String
    /// The BCP 47 language of the text, when known (`en`, `fr-CA`).
    public var language: String?
    /// A label for a menu.
    public var label: String?
    /// Frame packaging.
    public var container: Container
    /// Members not modelled above, in received order.
    public var extra: JSONObject

    /// The codec of WebVTT cue text.
    public static let webVTT = "wvtt"

    /// A WebVTT rendition in the legacy container.
    public init(codec: String = Self.webVTT, language: String? = nil, label: String? = nil) {
        self.codec = codec
        self.language = language
        self.label = label
        container = .legacy
        extra = JSONObject()
    }
}

extension CaptionConfig {
    init(_ value: JSONValue, path: String) throws(CatalogError) {
        var r = try FieldReader(value, path: path)
        self.init(codec: try r.string("codec"))
        language = try r.optionalString("language")
        label = try r.optionalString("label")
        if let (_, value) = try r.raw("container"), value != .null {
            container = try Container(value, path: r.fieldPath("container"))
        }
        extra = r.extra
    }

    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        o.member("codec", .string(codec), into: &w)
        o.optional("language", language.map { .string($0) }, into: &w)
        o.optional("label", label.map { .string($0) }, into: &w)
        o.key("container", into: &w)
        container.write(into: &w)
        o.extra(extra, skipping: ["codec", "language", "label", "container"], into: &w)
        o.close(into: &w)
    }
}

extension CaptionSection {
    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        o.key("renditions", into: &w)
        var map = ObjectWriter(&w)
        for name in renditions.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            map.key(name, into: &w)
            renditions[name]!.write(into: &w)
        }
        map.close(into: &w)
        o.extra(extra, skipping: ["renditions"], into: &w)
        o.close(into: &w)
    }
}

// SPDX-License-Identifier: MIT
import MoqWire

/// The hang catalog (`catalog.json`): every rendition a broadcast offers.
///
/// Decoding is bounded (``CatalogLimits``) and tolerant in the same places as the
/// Rust implementation: unknown keys are ignored by logic but kept, at every
/// level, so a republished catalog still carries them; a container of unknown
/// kind keeps its rendition (which consumers must skip). Unlike the Rust parser,
/// a malformed rendition does not sink the whole catalog: it is left out of the
/// sections and reported in ``issues``.
///
/// Encoding writes compact JSON that the Rust implementation parses: known
/// fields in its order, then unknown ones in received order, renditions sorted
/// by name as its `BTreeMap` does.
public struct HangCatalog: Sendable, Equatable {
    /// The track name the catalog is published on.
    public static let trackName = "catalog.json"

    /// Video renditions and the properties shared by them.
    public var video: VideoSection
    /// Audio renditions.
    public var audio: AudioSection
    /// Caption renditions (written only when there is one, so a catalog without captions is
    /// byte for byte what it was).
    public var captions: CaptionSection
    /// Root members this build does not model (`archive`, `clock`, application sections…), in received order.
    public var extra: JSONObject
    /// Renditions of the received catalog that could not be decoded; empty for a catalog built locally.
    public var issues: [RenditionIssue]

    /// An empty catalog.
    public init() {
        video = VideoSection()
        audio = AudioSection()
        captions = CaptionSection()
        extra = JSONObject()
        issues = []
    }

    /// Every decoded rendition, video then audio, each sorted by track name.
    public var renditions: [Rendition] {
        video.renditions.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map {
            Rendition(name: $0.key, config: .video($0.value))
        }
            + audio.renditions.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map {
                Rendition(name: $0.key, config: .audio($0.value))
            }
    }

    /// Adds or replaces the rendition published as `name`.
    public mutating func set(_ name: String, _ config: RenditionConfig) {
        remove(name)
        switch config {
        case .video(let v): video.renditions[name] = v
        case .audio(let a): audio.renditions[name] = a
        }
    }

    /// Removes the rendition published as `name`, from whichever section holds it.
    public mutating func remove(_ name: String) {
        video.renditions[name] = nil
        audio.renditions[name] = nil
        captions.renditions[name] = nil
    }
}

/// The `video` section.
public struct VideoSection: Sendable, Equatable {
    /// Renditions keyed by track name.
    public var renditions: [String: VideoConfig]
    /// Size to render at, in pixels (`display`).
    public var display: Display?
    /// Clockwise rotation in degrees.
    public var rotation: Double?
    /// Flip horizontally.
    public var flip: Bool?
    /// Members not modelled above, in received order.
    public var extra: JSONObject

    /// An empty section.
    public init() {
        renditions = [:]
        extra = JSONObject()
    }

    /// A display size (`{"width","height"}`).
    public struct Display: Sendable, Equatable {
        /// Width in pixels.
        public var width: UInt32
        /// Height in pixels.
        public var height: UInt32
        /// Members not modelled above.
        public var extra: JSONObject

        /// A display size.
        public init(width: UInt32, height: UInt32) {
            self.width = width
            self.height = height
            extra = JSONObject()
        }
    }
}

/// The `audio` section.
public struct AudioSection: Sendable, Equatable {
    /// Renditions keyed by track name.
    public var renditions: [String: AudioConfig]
    /// Members not modelled above, in received order.
    public var extra: JSONObject

    /// An empty section.
    public init() {
        renditions = [:]
        extra = JSONObject()
    }
}

// MARK: - Decoding

extension HangCatalog {
    /// Decodes a catalog received from the network.
    ///
    /// Throws for what makes the whole document unusable (size, depth, syntax, a
    /// root or section of the wrong type). A malformed rendition is only reported
    /// in ``issues``.
    public init(json bytes: some Collection<UInt8>, limits: CatalogLimits = .default) throws(CatalogError) {
        let root = try JSONValue(parsing: bytes, limits: limits)
        try self.init(root, limits: limits)
    }

    /// Decodes a catalog from JSON text.
    public init(json text: String, limits: CatalogLimits = .default) throws(CatalogError) {
        try self.init(json: Array(text.utf8), limits: limits)
    }

    /// Decodes a catalog from an already parsed JSON value.
    public init(_ root: JSONValue, limits: CatalogLimits = .default) throws(CatalogError) {
        self.init()
        var r = try FieldReader(root, path: "$")
        if let (_, value) = try r.raw("video"), value != .null {
            var section = try FieldReader(value, path: "$.video")
            let raw = try Self.renditionObjects(&section, limits: limits)
            for (name, value) in raw.entries {
                let path = CatalogError.path(section.fieldPath("renditions"), name)
                do {
                    video.renditions[name] = try VideoConfig(value, path: path)
                } catch {
                    issues.append(RenditionIssue(kind: .video, name: name, error: error, raw: value))
                }
            }
            if let (_, value) = try section.raw("display"), value != .null {
                var d = try FieldReader(value, path: section.fieldPath("display"))
                var display = VideoSection.Display(width: try d.uint32("width"), height: try d.uint32("height"))
                display.extra = d.extra
                video.display = display
            }
            video.rotation = try section.optionalDouble("rotation")
            video.flip = try section.optionalBool("flip")
            video.extra = section.extra
        }
        if let (_, value) = try r.raw("audio"), value != .null {
            var section = try FieldReader(value, path: "$.audio")
            let raw = try Self.renditionObjects(&section, limits: limits)
            for (name, value) in raw.entries {
                let path = CatalogError.path(section.fieldPath("renditions"), name)
                do {
                    audio.renditions[name] = try AudioConfig(value, path: path)
                } catch {
                    issues.append(RenditionIssue(kind: .audio, name: name, error: error, raw: value))
                }
            }
            audio.extra = section.extra
        }
        if let (_, value) = try r.raw("captions"), value != .null {
            var section = try FieldReader(value, path: "$.captions")
            let raw = try Self.renditionObjects(&section, limits: limits)
            // A malformed caption rendition is left out (``issues`` lists media renditions).
            for (name, value) in raw.entries {
                let path = CatalogError.path(section.fieldPath("renditions"), name)
                captions.renditions[name] = try? CaptionConfig(value, path: path)
            }
            captions.extra = section.extra
        }
        extra = r.extra
    }

    /// The `renditions` object of a section (absent reads as empty). A track name
    /// listed twice keeps its last value, as the Rust parser does.
    private static func renditionObjects(_ section: inout FieldReader, limits: CatalogLimits) throws(CatalogError)
        -> JSONObject
    {
        guard let (_, value) = try section.raw("renditions") else { return JSONObject() }
        let path = section.fieldPath("renditions")
        guard case .object(let object) = value else {
            throw .wrongType(path: path, expected: "object", found: value.typeName)
        }
        guard object.entries.count <= limits.maxRenditions else {
            throw .tooManyRenditions(path: path, limit: limits.maxRenditions)
        }
        var last: [String: Int] = [:]
        for (i, entry) in object.entries.enumerated() { last[entry.key] = i }
        return JSONObject(object.entries.enumerated().filter { last[$0.element.key] == $0.offset }.map(\.element))
    }
}

extension Container {
    init(_ value: JSONValue, path: String) throws(CatalogError) {
        guard case .object(let object) = value else {
            throw .wrongType(path: path, expected: "object", found: value.typeName)
        }
        guard case .string(let kind)? = object["kind"] else {
            // No usable kind: an unknown container, kept verbatim.
            self.init(.unknown(nil), extra: object)
            return
        }
        var r = try FieldReader(value, path: path)
        _ = try r.raw("kind")
        switch kind {
        case "legacy": self.init(.legacy)
        case "loc": self.init(.loc)
        case "cmaf":
            let text = try r.string("init")
            guard let bytes = Base64.decode(text) else {
                throw .invalidValue(path: r.fieldPath("init"), reason: "expected padded base64")
            }
            self.init(.cmaf(initSegment: Bytes(bytes)))
        default:
            // Kept verbatim, `kind` included, in received order.
            self.init(.unknown(kind), extra: object)
            return
        }
        extra = r.extra
    }
}

extension VideoConfig {
    init(_ value: JSONValue, path: String) throws(CatalogError) {
        var r = try FieldReader(value, path: path)
        self.init(codec: try r.string("codec"))
        broadcast = try r.optionalString("broadcast")
        description = try r.optionalHex("description")
        codedWidth = try r.optionalUInt32("codedWidth")
        codedHeight = try r.optionalUInt32("codedHeight")
        displayAspectWidth = try r.optionalUInt32("displayAspectWidth", "displayRatioWidth")
        displayAspectHeight = try r.optionalUInt32("displayAspectHeight", "displayRatioHeight")
        bitrate = try r.optionalUInt64("bitrate")
        stalled = try r.optionalBool("stalled")
        framerate = try r.optionalDouble("framerate")
        optimizeForLatency = try r.optionalBool("optimizeForLatency")
        if let (_, value) = try r.raw("container"), value != .null {
            container = try Container(value, path: r.fieldPath("container"))
        }
        jitter = try r.optionalUInt64("jitter")
        delay = try r.optionalUInt64("delay")
        extra = r.extra
    }
}

extension AudioConfig {
    init(_ value: JSONValue, path: String) throws(CatalogError) {
        var r = try FieldReader(value, path: path)
        self.init(
            codec: try r.string("codec"), sampleRate: try r.uint32("sampleRate"),
            numberOfChannels: try r.uint32("numberOfChannels"))
        broadcast = try r.optionalString("broadcast")
        bitrate = try r.optionalUInt64("bitrate")
        description = try r.optionalHex("description")
        if let (_, value) = try r.raw("container"), value != .null {
            container = try Container(value, path: r.fieldPath("container"))
        }
        jitter = try r.optionalUInt64("jitter")
        delay = try r.optionalUInt64("delay")
        extra = r.extra
    }
}

// MARK: - Encoding

extension HangCatalog {
    /// Compact JSON (UTF-8) for publishing on the catalog track.
    public func jsonBytes() -> [UInt8] {
        var w = JSONWriter()
        var root = ObjectWriter(&w)
        root.key("video", into: &w)
        video.write(into: &w)
        root.key("audio", into: &w)
        audio.write(into: &w)
        if !captions.renditions.isEmpty {
            root.key("captions", into: &w)
            captions.write(into: &w)
        }
        for (k, v) in extra.entries where k != "video" && k != "audio" && k != "captions" {
            root.member(k, v, into: &w)
        }
        root.close(into: &w)
        return w.bytes
    }

    /// Compact JSON text.
    public func jsonString() -> String { String(decoding: jsonBytes(), as: UTF8.self) }
}

/// Track names in the order Rust's `BTreeMap<String, _>` keeps them (bytewise).
private func sortedNames<V>(_ renditions: [String: V]) -> [String] {
    renditions.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
}

extension VideoSection {
    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        o.key("renditions", into: &w)
        var map = ObjectWriter(&w)
        for name in sortedNames(renditions) {
            map.key(name, into: &w)
            renditions[name]!.write(into: &w)
        }
        map.close(into: &w)
        if let display {
            o.key("display", into: &w)
            var d = ObjectWriter(&w)
            d.member("width", .number(JSONNumber(UInt64(display.width))), into: &w)
            d.member("height", .number(JSONNumber(UInt64(display.height))), into: &w)
            d.extra(display.extra, skipping: ["width", "height"], into: &w)
            d.close(into: &w)
        }
        o.double("rotation", rotation, into: &w)
        o.optional("flip", flip.map { .bool($0) }, into: &w)
        o.extra(extra, skipping: ["renditions", "display", "rotation", "flip"], into: &w)
        o.close(into: &w)
    }
}

extension AudioSection {
    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        o.key("renditions", into: &w)
        var map = ObjectWriter(&w)
        for name in sortedNames(renditions) {
            map.key(name, into: &w)
            renditions[name]!.write(into: &w)
        }
        map.close(into: &w)
        o.extra(extra, skipping: ["renditions"], into: &w)
        o.close(into: &w)
    }
}

extension Container {
    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        switch kind {
        case .legacy: o.member("kind", .string("legacy"), into: &w)
        case .loc: o.member("kind", .string("loc"), into: &w)
        case .cmaf(let initSegment):
            o.member("kind", .string("cmaf"), into: &w)
            o.member("init", .string(Base64.encode(initSegment)), into: &w)
        case .unknown(let name):
            // Kept verbatim, `kind` included, in received order.
            if let name, extra["kind"] == nil { o.member("kind", .string(name), into: &w) }
            for (k, v) in extra.entries { o.member(k, v, into: &w) }
            o.close(into: &w)
            return
        }
        o.extra(extra, skipping: kindName == "cmaf" ? ["kind", "init"] : ["kind"], into: &w)
        o.close(into: &w)
    }
}

extension VideoConfig {
    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        o.optional("broadcast", broadcast.map { .string($0) }, into: &w)
        o.member("codec", .string(codec), into: &w)
        o.optional("description", description.map { .string(Hex.encode($0)) }, into: &w)
        o.integer("codedWidth", codedWidth.map { UInt64($0) }, into: &w)
        o.integer("codedHeight", codedHeight.map { UInt64($0) }, into: &w)
        o.integer("displayAspectWidth", displayAspectWidth.map { UInt64($0) }, into: &w)
        o.integer("displayAspectHeight", displayAspectHeight.map { UInt64($0) }, into: &w)
        o.integer("bitrate", bitrate, into: &w)
        o.optional("stalled", stalled.map { .bool($0) }, into: &w)
        o.double("framerate", framerate, into: &w)
        o.optional("optimizeForLatency", optimizeForLatency.map { .bool($0) }, into: &w)
        o.key("container", into: &w)
        container.write(into: &w)
        o.integer("jitter", jitter, into: &w)
        o.integer("delay", delay, into: &w)
        o.extra(extra, skipping: Self.knownKeys, into: &w)
        o.close(into: &w)
    }

    static let knownKeys: Set<String> = [
        "broadcast", "codec", "description", "codedWidth", "codedHeight", "displayAspectWidth",
        "displayAspectHeight", "displayRatioWidth", "displayRatioHeight", "bitrate", "stalled", "framerate",
        "optimizeForLatency", "container", "jitter", "delay",
    ]
}

extension AudioConfig {
    func write(into w: inout JSONWriter) {
        var o = ObjectWriter(&w)
        o.optional("broadcast", broadcast.map { .string($0) }, into: &w)
        o.member("codec", .string(codec), into: &w)
        o.integer("sampleRate", UInt64(sampleRate), into: &w)
        o.integer("numberOfChannels", UInt64(numberOfChannels), into: &w)
        o.integer("bitrate", bitrate, into: &w)
        o.optional("description", description.map { .string(Hex.encode($0)) }, into: &w)
        o.key("container", into: &w)
        container.write(into: &w)
        o.integer("jitter", jitter, into: &w)
        o.integer("delay", delay, into: &w)
        o.extra(extra, skipping: Self.knownKeys, into: &w)
        o.close(into: &w)
    }

    static let knownKeys: Set<String> = [
        "broadcast", "codec", "sampleRate", "numberOfChannels", "bitrate", "description", "container", "jitter",
        "delay",
    ]
}

extension ObjectWriter {
    mutating func optional(_ key: String, _ value: JSONValue?, into w: inout JSONWriter) {
        if let value { member(key, value, into: &w) }
    }

    mutating func integer(_ key: String, _ value: UInt64?, into w: inout JSONWriter) {
        if let value { member(key, .number(JSONNumber(value)), into: &w) }
    }

    /// Writes a finite double; NaN and infinities have no JSON form and are left out.
    mutating func double(_ key: String, _ value: Double?, into w: inout JSONWriter) {
        if let value, let number = JSONNumber(value) { member(key, .number(number), into: &w) }
    }

    /// Writes the unmodelled members, except any that a modelled field now owns
    /// (an `extra` edited by hand could otherwise produce a duplicate key).
    mutating func extra(_ extra: JSONObject, skipping known: Set<String>, into w: inout JSONWriter) {
        for (k, v) in extra.entries where !known.contains(k) { member(k, v, into: &w) }
    }
}

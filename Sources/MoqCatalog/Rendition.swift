// SPDX-License-Identifier: MIT
public import MoqWire

/// Whether a rendition is audio or video (the catalog section it lives in).
public enum MediaKind: String, Sendable, Hashable, CustomStringConvertible {
    /// The `video` section.
    case video
    /// The `audio` section.
    case audio

    /// `video` or `audio`.
    public var description: String { rawValue }
}

/// How a rendition's frames are packaged (`container` in the catalog).
///
/// Members other than `kind` (and `init` for CMAF) are kept in ``extra`` and
/// written back on encode.
public struct Container: Sendable, Equatable {
    /// The container kinds.
    public enum Kind: Sendable, Equatable {
        /// `varint(timestamp µs)` followed by the raw codec bytes (see ``LegacyFrame``).
        /// The default when `container` is absent.
        case legacy
        /// Each frame is a CMAF `moof`+`mdat` fragment; `initSegment` is the `ftyp`+`moov`.
        case cmaf(initSegment: Bytes)
        /// draft-ietf-moq-loc: a property block, then the codec bytes.
        case loc
        /// A kind this build does not know (its name, nil when `kind` is absent or not a
        /// string). The rendition must be ignored, but is preserved when republished.
        case unknown(String?)
    }

    /// The kind.
    public var kind: Kind
    /// Other members of the container object, in received order.
    public var extra: JSONObject

    /// A container of `kind` with no extra members.
    public init(_ kind: Kind, extra: JSONObject = JSONObject()) {
        self.kind = kind
        self.extra = extra
    }

    /// The legacy container (the default).
    public static let legacy = Container(.legacy)

    /// The `kind` string, as written in the catalog (nil for an unknown container without one).
    public var kindName: String? {
        switch kind {
        case .legacy: "legacy"
        case .cmaf: "cmaf"
        case .loc: "loc"
        case .unknown(let name): name
        }
    }
}

/// One video rendition (a WebCodecs `VideoDecoderConfig` plus transport hints).
///
/// Field names match the catalog's camelCase JSON. Members this build does not
/// model (`timeline`, future fields) are kept in ``extra``.
public struct VideoConfig: Sendable, Equatable {
    /// The WebCodecs codec string, e.g. `avc1.42c00d`, `hev1.1.6.L93.B0`, `vp8`.
    public var codec: String
    /// Codec configuration (avcC, hvcC, av1C); hex in JSON. Absent for in-band parameter sets.
    public var description: Bytes?
    /// Encoded width in pixels.
    public var codedWidth: UInt32?
    /// Encoded height in pixels.
    public var codedHeight: UInt32?
    /// Display aspect ratio width (also read from the older `displayRatioWidth`).
    public var displayAspectWidth: UInt32?
    /// Display aspect ratio height (also read from the older `displayRatioHeight`).
    public var displayAspectHeight: UInt32?
    /// Bits per second.
    public var bitrate: UInt64?
    /// Frames per second.
    public var framerate: Double?
    /// Whether the decoder should favour latency (WebCodecs `optimizeForLatency`).
    public var optimizeForLatency: Bool?
    /// The publisher suggests avoiding this rendition for now.
    public var stalled: Bool?
    /// A relative path to another broadcast that carries this track (`./source`); nil means this one.
    public var broadcast: String?
    /// Frame packaging.
    public var container: Container
    /// Largest delay before a frame is flushed, in milliseconds.
    public var jitter: UInt64?
    /// Encoder delay, in milliseconds.
    public var delay: UInt64?
    /// Members not modelled above, in received order.
    public var extra: JSONObject

    /// A rendition with `codec` in the legacy container and nothing else set.
    public init(codec: String, container: Container = .legacy) {
        self.codec = codec
        self.container = container
        extra = JSONObject()
    }
}

/// One audio rendition (a WebCodecs `AudioDecoderConfig` plus transport hints).
public struct AudioConfig: Sendable, Equatable {
    /// The WebCodecs codec string, e.g. `opus`, `mp4a.40.2`.
    public var codec: String
    /// Samples per second.
    public var sampleRate: UInt32
    /// Channel count.
    public var numberOfChannels: UInt32
    /// Bits per second.
    public var bitrate: UInt64?
    /// Codec configuration: the OpusHead for Opus, the AudioSpecificConfig for AAC; hex in JSON.
    public var description: Bytes?
    /// A relative path to another broadcast that carries this track; nil means this one.
    public var broadcast: String?
    /// Frame packaging.
    public var container: Container
    /// Largest delay before a frame is flushed, in milliseconds.
    public var jitter: UInt64?
    /// Encoder delay, in milliseconds.
    public var delay: UInt64?
    /// Members not modelled above, in received order.
    public var extra: JSONObject

    /// A rendition with the required fields, in the legacy container.
    public init(codec: String, sampleRate: UInt32, numberOfChannels: UInt32, container: Container = .legacy) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.numberOfChannels = numberOfChannels
        self.container = container
        extra = JSONObject()
    }
}

/// A rendition of either kind.
public enum RenditionConfig: Sendable, Equatable {
    /// A `video.renditions` entry.
    case video(VideoConfig)
    /// An `audio.renditions` entry.
    case audio(AudioConfig)

    /// The section it belongs to.
    public var kind: MediaKind {
        switch self {
        case .video: .video
        case .audio: .audio
        }
    }

    /// The WebCodecs codec string.
    public var codec: String {
        switch self {
        case .video(let v): v.codec
        case .audio(let a): a.codec
        }
    }

    /// The codec configuration bytes, if any.
    public var description: Bytes? {
        switch self {
        case .video(let v): v.description
        case .audio(let a): a.description
        }
    }

    /// The frame packaging.
    public var container: Container {
        switch self {
        case .video(let v): v.container
        case .audio(let a): a.container
        }
    }
}

/// A named rendition: the track name it is published under and its configuration.
public struct Rendition: Sendable, Equatable {
    /// The track name, e.g. `0.avc3`.
    public var name: String
    /// Its configuration.
    public var config: RenditionConfig

    /// Names `config` as track `name`.
    public init(name: String, config: RenditionConfig) {
        self.name = name
        self.config = config
    }
}

/// A rendition that was present in a received catalog but could not be decoded.
///
/// The rest of the catalog is unaffected. Such renditions are not re-encoded:
/// the Rust parser would reject the whole catalog because of them.
public struct RenditionIssue: Sendable, Equatable, CustomStringConvertible {
    /// The section it was found in.
    public var kind: MediaKind
    /// Its track name.
    public var name: String
    /// What was wrong with it.
    public var error: CatalogError
    /// The rendition exactly as received (for diagnostics).
    public var raw: JSONValue

    /// Which rendition, and what was wrong.
    public var description: String { "\(kind) rendition \"\(name)\": \(error)" }
}

// SPDX-License-Identifier: MIT
public import MoqCatalog
public import MoqWire

/// How the buffers of a stream must be laid out, one buffer per legacy frame.
public enum BufferLayout: Sendable, Equatable, CustomStringConvertible {
    /// H.264/H.265 access units as NAL units each prefixed by a big-endian length of
    /// `lengthSize` bytes (AVCC/HVCC). Parameter sets are in the rendition's `description`
    /// (and may also appear in band for avc3/hev1).
    case lengthPrefixed(lengthSize: Int)
    /// H.264/H.265 access units in Annex-B byte-stream form (start codes), with the
    /// parameter sets in band before each keyframe; no `description`.
    case annexB
    /// One AV1 temporal unit as low-overhead OBUs (`obu_has_size_field` set), the sequence
    /// header in band on keyframes.
    case av1TemporalUnit
    /// One VP8 frame, or one VP9 frame or superframe, per buffer.
    case vpxFrame
    /// One Opus packet per buffer (the OpusHead is the `description`).
    case opusPacket
    /// One raw AAC access unit per buffer, no ADTS header (the AudioSpecificConfig is the `description`).
    case rawAAC
    /// One MPEG audio frame, header included, per buffer.
    case mpegAudioFrame
    /// One FLAC frame per buffer (the `fLaC` marker and STREAMINFO are the `description`; the
    /// parser's header buffers are not frames).
    case flacFrame
    /// Interleaved little-endian 32-bit float samples (hang's `pcm`), channels in the default
    /// order for their count (GStreamer's fallback positions: FL FR FC LFE RL RR SL SR).
    case pcmF32

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .lengthPrefixed(let size): "length-prefixed NAL units (\(size)-byte lengths)"
        case .annexB: "Annex-B byte stream"
        case .av1TemporalUnit: "AV1 temporal unit (OBUs with sizes)"
        case .vpxFrame: "one VPx frame"
        case .opusPacket: "one Opus packet"
        case .rawAAC: "raw AAC frame"
        case .mpegAudioFrame: "MPEG audio frame"
        case .flacFrame: "one FLAC frame"
        case .pcmF32: "interleaved F32LE samples"
        }
    }
}

/// What `moqsink` publishes for one pad: the catalog rendition, the family its track is
/// named after, and how each buffer must be laid out.
public struct MediaRendition: Sendable, Equatable {
    /// The catalog entry (codec string, description, dimensions or sample rate…), legacy container.
    public var config: RenditionConfig
    /// The codec family the Rust publisher names tracks after (`<index>.<family>`):
    /// `avc1`, `avc3`, `hvc1`, `hev1`, `av01`, `vp8`, `vp9`, `opus`, `aac`, `mp3`.
    public var family: String
    /// How each buffer is laid out; buffers are published as they are.
    public var layout: BufferLayout
    /// True when the codec string was built from caps fields that cannot give every
    /// parameter (H.264/H.265 byte-stream without an SPS at hand, AV1 without `av1C`).
    /// Pass the first keyframe to ``refined(withKeyframe:)`` before publishing the
    /// catalog to replace it with the bitstream's exact value, as the Rust importers do.
    public var isProvisional: Bool

    /// Builds a rendition.
    public init(config: RenditionConfig, family: String, layout: BufferLayout, isProvisional: Bool = false) {
        self.config = config
        self.family = family
        self.layout = layout
        self.isProvisional = isProvisional
    }

    /// Audio or video.
    public var kind: MediaKind { config.kind }

    /// The WebCodecs codec string.
    public var codec: String { config.codec }

    /// The codec configuration bytes (`description`), if any.
    public var codecDescription: Bytes? { config.description }

    /// A copy whose codec string is read from the parameter sets in `keyframe` (the SPS of
    /// an Annex-B access unit, the AV1 sequence header OBU). Unchanged when the rendition is
    /// not provisional or the frame holds no parameter set.
    public func refined(withKeyframe keyframe: UnsafeRawBufferPointer) -> MediaRendition {
        guard isProvisional, case .video(var video) = config else { return self }
        let exact: String?
        switch family {
        case "avc3": exact = Bitstream.h264Codec(annexB: keyframe)?.string
        case "hev1": exact = Bitstream.h265Codec(annexB: keyframe)?.string
        case "av01": exact = Bitstream.av1Codec(obus: keyframe)?.string
        default: exact = nil
        }
        guard let exact else { return self }
        video.codec = exact
        return MediaRendition(config: .video(video), family: family, layout: layout, isProvisional: false)
    }

    /// ``refined(withKeyframe:)`` over `Bytes`.
    public func refined(withKeyframe keyframe: Bytes) -> MediaRendition {
        keyframe.withUnsafeBytes { refined(withKeyframe: $0) }
    }
}

/// A rendition of a received catalog that `moqsrc` can play, with the caps of its pad.
public struct PlayableRendition: Sendable, Equatable {
    /// Track name and configuration.
    public var rendition: Rendition
    /// The caps to set on the pad (see ``MediaFormat/caps(for:)``).
    public var caps: String
    /// How the track's frame payloads are laid out.
    public var layout: BufferLayout
}

/// A rendition of a received catalog that cannot be played, and why.
public struct SkippedRendition: Sendable, Equatable, CustomStringConvertible {
    /// Audio or video.
    public var kind: MediaKind
    /// Its track name.
    public var name: String
    /// Why it is skipped ("skipped: …").
    public var reason: String

    /// A one-line explanation.
    public var description: String { "\(kind) rendition \"\(name)\" \(reason)" }
}

/// Why caps cannot be published, or a rendition cannot be played.
///
/// The message names the caps (or codec) and what is missing, for the sink to post with
/// not-negotiated and for `moqsrc` to log when it skips a rendition.
public enum MediaFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// GStreamer could not parse the caps string.
    case unparsableCaps(String)
    /// The caps still hold ranges or lists.
    case notFixed(caps: String)
    /// Caps of a media type or format that is not published (with a hint when one helps).
    case unsupportedCaps(caps: String, reason: String)
    /// Caps of a supported type that lack a field the catalog needs.
    case incompleteCaps(caps: String, missing: String)
    /// A configuration record in the caps (codec_data, streamheader) that does not parse.
    case invalidCodecData(caps: String, reason: String)
    /// A rendition whose codec is not one this build can map to caps.
    case unsupportedCodec(codec: String)
    /// A rendition whose container is not the legacy container.
    case unsupportedContainer(kind: String)
    /// A rendition that lacks what its codec needs (e.g. AAC without its AudioSpecificConfig).
    case incompleteRendition(codec: String, missing: String)
    /// A rendition whose codec string or description is malformed.
    case invalidRendition(codec: String, reason: String)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .unparsableCaps(let caps): "cannot parse caps \"\(abbreviated(caps))\""
        case .notFixed(let caps): "caps are not fixed: \(abbreviated(caps))"
        case .unsupportedCaps(let caps, let reason): "unsupported caps \(abbreviated(caps)): \(reason)"
        case .incompleteCaps(let caps, let missing): "incomplete caps \(abbreviated(caps)): missing \(missing)"
        case .invalidCodecData(let caps, let reason): "invalid caps \(abbreviated(caps)): \(reason)"
        case .unsupportedCodec(let codec): "skipped: codec \"\(codec)\" is not supported"
        case .unsupportedContainer(let kind):
            "skipped: container \"\(kind)\" is not supported (only \"legacy\" and \"cmaf\")"
        case .incompleteRendition(let codec, let missing): "skipped: \(codec) rendition has no \(missing)"
        case .invalidRendition(let codec, let reason): "skipped: \(codec) rendition is invalid: \(reason)"
        }
    }
}

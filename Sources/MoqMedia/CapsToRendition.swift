// SPDX-License-Identifier: MIT
package import CGStreamer
import CGstAudio
import CGstPbutils
import CGstVideo
import GstSupport
import MoqCatalog
import MoqWire

/// Maps between GStreamer caps and hang catalog renditions.
///
/// `moqsink` calls ``rendition(forCaps:)-(String)`` on each pad's CAPS event to learn what
/// to put in the catalog, how to name the track and how buffers are laid out; `moqsrc`
/// calls ``caps(for:)`` (or ``playable(in:)``) for each rendition of a received catalog.
///
/// Codec strings and configuration records come from GStreamer's own codec utilities
/// (`gst_codec_utils_caps_get_mime_codec`, the pbutils H.264/H.265/AAC/Opus helpers),
/// corrected where they disagree with what WebCodecs and the Rust implementation
/// expect, and written in the exact form hang writes. In GStreamer 1.22:
/// - H.264 with codec_data gives `avc1.F4000D` (uppercase, and `avc1` for avc3 too);
///   byte-stream gives a bare `avc1`: built here as `avc3.PPCCLL` from profile/level.
/// - H.265 pads constraint bytes (`98.08`; hang writes `98.8`); byte-stream gives a bare `hev1`.
/// - AV1 ignores `codec_data` and gives a bare `av01`: read from the av1C here.
/// - VP8 gives `vp08` (WebCodecs: `vp8`); VP9 always writes level 10, and gives a bare
///   `vp09` without vp9parse's fields: the level is derived from the picture size, as the
///   Rust importer does.
/// - MP3 gives `mp4a.40` (WebCodecs: `mp3`).
///
/// All functions are thread-safe and initialise GStreamer if the process has not.
public enum MediaFormat {
    /// The rendition `moqsink` publishes for fixed caps given as a string.
    ///
    /// - Throws: ``MediaFormatError`` naming the caps and what is missing or unsupported
    ///   (the sink answers the CAPS event with not-negotiated and this message).
    public static func rendition(forCaps caps: String) throws(MediaFormatError) -> MediaRendition {
        guard let owned = OwnedCaps(parsing: caps) else { throw .unparsableCaps(caps) }
        return try rendition(forCaps: owned.pointer)
    }

    /// The rendition `moqsink` publishes for fixed caps (from a CAPS event; not consumed).
    package static func rendition(forCaps caps: UnsafeMutablePointer<GstCaps>) throws(MediaFormatError)
        -> MediaRendition
    {
        GstInitialization.ensure()
        let text = capsString(caps)
        guard gst_caps_is_fixed(caps) != 0 else { throw .notFixed(caps: text) }
        guard let fields = CapsFields(caps) else { throw .unsupportedCaps(caps: text, reason: "empty caps") }
        let source = CapsSource(caps: caps, fields: fields, text: text)
        switch fields.name {
        case "video/x-h264": return try source.h264()
        case "video/x-h265": return try source.h265()
        case "video/x-av1": return try source.av1()
        case "video/x-vp8": return source.vp8()
        case "video/x-vp9": return try source.vp9()
        case "audio/x-opus": return try source.opus()
        case "audio/mpeg": return try source.mpegAudio()
        case "audio/x-flac": return try source.flac()
        case "audio/x-raw": return try source.pcm()
        default:
            throw .unsupportedCaps(
                caps: text,
                reason: "\(fields.name) is not published (supported: video/x-h264, video/x-h265, video/x-av1, "
                    + "video/x-vp8, video/x-vp9, audio/x-opus, audio/mpeg, audio/x-flac, audio/x-raw F32LE)")
        }
    }
}

extension MediaFormat {
    /// GStreamer's own codec string for `caps` (`gst_codec_utils_caps_get_mime_codec`), uncorrected.
    package static func mimeCodec(_ caps: UnsafeMutablePointer<GstCaps>) -> String? {
        GstInitialization.ensure()
        return takeString(gst_codec_utils_caps_get_mime_codec(caps))
    }
}

/// Fixed caps being turned into a rendition.
private struct CapsSource {
    let caps: UnsafeMutablePointer<GstCaps>
    let fields: CapsFields
    let text: String

    // MARK: Errors

    func unsupported(_ reason: String) -> MediaFormatError { .unsupportedCaps(caps: text, reason: reason) }
    func missing(_ what: String) -> MediaFormatError { .incompleteCaps(caps: text, missing: what) }
    func invalid(_ reason: String) -> MediaFormatError { .invalidCodecData(caps: text, reason: reason) }

    var mimeCodec: String? { MediaFormat.mimeCodec(caps) }

    /// Accepts an absent `alignment` or one of `allowed`.
    func requireAlignment(_ allowed: String, hint: String) throws(MediaFormatError) {
        if let alignment = fields.string("alignment"), alignment != allowed {
            throw unsupported("alignment=\(alignment); only alignment=\(allowed) is published (\(hint))")
        }
    }

    // MARK: Common fields

    var width: Int? { fields.int("width").flatMap { $0 > 0 ? $0 : nil } }
    var height: Int? { fields.int("height").flatMap { $0 > 0 ? $0 : nil } }

    func video(_ codec: String, description: [UInt8]? = nil) -> VideoConfig {
        var config = VideoConfig(codec: codec)
        config.description = description.map { Bytes($0) }
        config.codedWidth = width.map { UInt32($0) }
        config.codedHeight = height.map { UInt32($0) }
        if let (n, d) = fields.fraction("framerate"), n > 0, d > 0 { config.framerate = Double(n) / Double(d) }
        if let (n, d) = fields.fraction("pixel-aspect-ratio"), n > 0, d > 0, n != d, let width, let height {
            let w = Int64(width) * Int64(n)
            let h = Int64(height) * Int64(d)
            let g = gcd(w, h)
            if w / g <= Int64(UInt32.max), h / g <= Int64(UInt32.max) {
                config.displayAspectWidth = UInt32(w / g)
                config.displayAspectHeight = UInt32(h / g)
            }
        }
        return config
    }

    /// CICP (ISO/IEC 23091-2) colour description of the `colorimetry` field, through GstVideo.
    var colorimetry: (primaries: UInt8, transfer: UInt8, matrix: UInt8, fullRange: Bool)? {
        guard let text = fields.string("colorimetry") else { return nil }
        var info = GstVideoColorimetry()
        guard gst_video_colorimetry_from_string(&info, text) != 0 else { return nil }
        let primaries = gst_video_color_primaries_to_iso(info.primaries)
        let transfer = gst_video_transfer_function_to_iso(info.transfer)
        let matrix = gst_video_color_matrix_to_iso(info.matrix)
        guard primaries < 256, transfer < 256, matrix < 256 else { return nil }
        return (UInt8(primaries), UInt8(transfer), UInt8(matrix), info.range == GST_VIDEO_COLOR_RANGE_0_255)
    }

    // MARK: H.264

    func h264() throws(MediaFormatError) -> MediaRendition {
        let hint = "put h264parse before moqsink"
        try requireAlignment("au", hint: hint)
        switch fields.string("stream-format") {
        case let format? where format == "avc" || format == "avc3":
            guard let avcC = fields.buffer("codec_data") else { throw missing("codec_data (the avcC record)") }
            var profile: guint8 = 0
            var flags: guint8 = 0
            var level: guint8 = 0
            guard avcC.count >= 7, avcC[0] == 1,
                gst_codec_utils_h264_get_profile_flags_level(avcC, guint(avcC.count), &profile, &flags, &level) != 0
            else { throw invalid("codec_data is not an avcC record") }
            // GStreamer writes `avc1.F4000D` for both avc and avc3: uppercase, and always avc1.
            guard var codec = H264Codec(mimeCodec?.lowercased() ?? "") else {
                throw invalid("GStreamer gives no codec string for this avcC")
            }
            codec.inBand = format == "avc3"
            let config = video(codec.string, description: avcC)
            return MediaRendition(
                config: .video(config), family: codec.family, layout: .lengthPrefixed(lengthSize: Int(avcC[4] & 3) + 1))
        case "byte-stream":
            // GStreamer's codec string for byte-stream is a bare "avc1": build avc3.PPCCLL from
            // the profile and level h264parse puts in the caps; the SPS refines it.
            guard let profileName = fields.string("profile"), let levelName = fields.string("level") else {
                throw missing("profile and level (\(hint))")
            }
            guard let profile = h264Profiles[profileName] else {
                throw unsupported("unknown H.264 profile \(profileName)")
            }
            let level = gst_codec_utils_h264_get_level_idc(levelName)
            guard level != 0 else { throw unsupported("unknown H.264 level \(levelName)") }
            let codec = H264Codec(inBand: true, profile: profile.idc, constraints: profile.constraints, level: level)
            return MediaRendition(
                config: .video(video(codec.string)), family: "avc3", layout: .annexB, isProvisional: true)
        case let format:
            throw unsupported("stream-format=\(format ?? "(none)"); expected avc, avc3 or byte-stream (\(hint))")
        }
    }

    // MARK: H.265

    func h265() throws(MediaFormatError) -> MediaRendition {
        let hint = "put h265parse before moqsink"
        try requireAlignment("au", hint: hint)
        switch fields.string("stream-format") {
        case let format? where format == "hvc1" || format == "hev1":
            guard let hvcC = fields.buffer("codec_data") else { throw missing("codec_data (the hvcC record)") }
            guard hvcC.count >= 23, hvcC[0] == 1 else { throw invalid("codec_data is not an hvcC record") }
            // GStreamer's string is ISO 14496-15 but pads constraint bytes ("98.08"); hang writes "98.8".
            guard var codec = H265Codec(mimeCodec ?? "") else {
                throw invalid("GStreamer gives no codec string for this hvcC")
            }
            codec.inBand = format == "hev1"
            let config = video(codec.string, description: hvcC)
            return MediaRendition(
                config: .video(config), family: codec.family, layout: .lengthPrefixed(lengthSize: Int(hvcC[21] & 3) + 1)
            )
        case "byte-stream":
            guard let profileName = fields.string("profile"), let levelName = fields.string("level") else {
                throw missing("profile and level (\(hint))")
            }
            guard let ptl = H265Profiles.shared.profileTierLevel(profile: profileName) else {
                throw unsupported("unknown H.265 profile \(profileName)")
            }
            let level = gst_codec_utils_h265_get_level_idc(levelName)
            guard level != 0 else { throw unsupported("unknown H.265 level \(levelName)") }
            guard var codec = H265Codec(inBand: true, profileTierLevel: ptl) else { throw unsupported("internal") }
            codec.levelIDC = level
            codec.highTier = fields.string("tier") == "high"
            if fields.string("interlace-mode").map({ $0 == "progressive" }) ?? true {
                codec.constraints[0] |= 0x90  // progressive_source_flag, frame_only_constraint_flag
            }
            return MediaRendition(
                config: .video(video(codec.string)), family: "hev1", layout: .annexB, isProvisional: true)
        case let format:
            throw unsupported("stream-format=\(format ?? "(none)"); expected hvc1, hev1 or byte-stream (\(hint))")
        }
    }

    // MARK: AV1

    func av1() throws(MediaFormatError) -> MediaRendition {
        let hint = "put av1parse before moqsink"
        if let format = fields.string("stream-format"), format != "obu-stream" {
            throw unsupported("stream-format=\(format); only obu-stream is published (\(hint))")
        }
        try requireAlignment("tu", hint: hint)
        // GStreamer 1.22 ignores codec_data here and answers a bare "av01".
        if let av1C = fields.buffer("codec_data") {
            guard let codec = AV1Codec(av1C: av1C) else { throw invalid("codec_data is not an av1C record") }
            return MediaRendition(
                config: .video(video(codec.string, description: av1C)), family: "av01", layout: .av1TemporalUnit)
        }
        let profile: UInt8
        switch fields.string("profile") {
        case nil, "main": profile = 0
        case "high": profile = 1
        case "professional": profile = 2
        case let other?: throw unsupported("unknown AV1 profile \(other)")
        }
        var codec = AV1Codec(
            profile: profile, level: AV1Codec.level(width: width ?? 0, height: height ?? 0), highTier: false,
            bitDepth: UInt8(clamping: fields.uint("bit-depth-luma") ?? 8))
        switch fields.string("chroma-format") {
        case "4:4:4":
            codec.subsamplingX = false
            codec.subsamplingY = false
        case "4:2:2": codec.subsamplingY = false
        case "4:0:0": codec.monochrome = true
        default: break
        }
        if let color = colorimetry {
            codec.colorPrimaries = color.primaries
            codec.transferCharacteristics = color.transfer
            codec.matrixCoefficients = color.matrix
            codec.fullRange = color.fullRange
        }
        return MediaRendition(
            config: .video(video(codec.string)), family: "av01", layout: .av1TemporalUnit, isProvisional: true)
    }

    // MARK: VP8, VP9

    func vp8() -> MediaRendition {
        // GStreamer says "vp08"; WebCodecs and hang say "vp8".
        MediaRendition(config: .video(video("vp8")), family: "vp8", layout: .vpxFrame)
    }

    func vp9() throws(MediaFormatError) -> MediaRendition {
        // GStreamer fills the colour fields from vp9parse's caps but always writes level 10.
        var codec: VP9Codec
        if let parsed = mimeCodec.flatMap(VP9Codec.init) {
            codec = parsed
        } else {
            guard let profile = UInt8(fields.string("profile") ?? "0"), profile <= 3 else {
                throw unsupported("unknown VP9 profile \(fields.string("profile") ?? "")")
            }
            codec = VP9Codec(
                profile: profile, level: 10,
                bitDepth: UInt8(clamping: fields.uint("bit-depth-luma") ?? (profile >= 2 ? 10 : 8)))
        }
        if let levelName = fields.string("level"), let level = vp9Level(levelName) {
            codec.level = level
        } else {
            codec.level = VP9Codec.level(width: width ?? 0, height: height ?? 0)
        }
        return MediaRendition(config: .video(video(codec.string)), family: "vp9", layout: .vpxFrame)
    }

    /// "4.1" → 41.
    func vp9Level(_ name: String) -> UInt8? {
        let parts = name.split(separator: ".")
        guard parts.count <= 2, let major = UInt8(parts[0]), major <= 6 else { return nil }
        let minor = parts.count == 2 ? UInt8(parts[1]) : 0
        guard let minor, minor <= 9 else { return nil }
        return major * 10 + minor
    }

    // MARK: Opus

    func opus() throws(MediaFormatError) -> MediaRendition {
        guard let rate = fields.int("rate"), rate > 0, let channels = fields.int("channels"), channels > 0 else {
            throw missing("rate and channels")
        }
        let head: [UInt8]
        if let first = fields.bufferArray("streamheader")?.first {
            guard OpusHead.parse(first) != nil else { throw invalid("streamheader does not start with an OpusHead") }
            head = first
        } else {
            var r: guint32 = 0
            var c: guint8 = 0
            var family: guint8 = 0
            var streams: guint8 = 0
            var coupled: guint8 = 0
            var mapping = [guint8](repeating: 0, count: 256)
            guard
                gst_codec_utils_opus_parse_caps(caps, &r, &c, &family, &streams, &coupled, &mapping) != 0,
                let buffer = gst_codec_utils_opus_create_header(r, c, family, streams, coupled, &mapping, 0, 0)
            else { throw missing("channel-mapping-family, stream-count, coupled-count and channel-mapping") }
            head = copyBytes(buffer)
            gst_buffer_unref(buffer)
        }
        var config = AudioConfig(codec: "opus", sampleRate: UInt32(rate), numberOfChannels: UInt32(channels))
        config.description = Bytes(head)
        return MediaRendition(config: .audio(config), family: "opus", layout: .opusPacket)
    }

    // MARK: FLAC, PCM

    /// FLAC from flacparse (or flacenc): the STREAMINFO comes from the first `streamheader`
    /// buffer (Ogg FLAC mapping: `0x7F "FLAC"`, version, header count, then `fLaC` and the
    /// metadata block), and the description is what WebCodecs and hang want: `fLaC` + STREAMINFO.
    func flac() throws(MediaFormatError) -> MediaRendition {
        guard let rate = fields.int("rate"), rate > 0, let channels = fields.int("channels"), channels > 0,
            channels <= 8
        else { throw missing("rate and channels (1 to 8; put flacparse before moqsink)") }
        guard let first = fields.bufferArray("streamheader")?.first else {
            throw missing("streamheader with the STREAMINFO (put flacparse before moqsink)")
        }
        guard let description = FLACStreamInfo.description(fromStreamHeader: first) else {
            throw invalid("streamheader does not start with a FLAC STREAMINFO")
        }
        var config = AudioConfig(codec: "flac", sampleRate: UInt32(rate), numberOfChannels: UInt32(channels))
        config.description = Bytes(description)
        return MediaRendition(config: .audio(config), family: "flac", layout: .flacFrame)
    }

    /// Raw audio as hang's `pcm`: interleaved F32LE, channels in their default order.
    func pcm() throws(MediaFormatError) -> MediaRendition {
        guard fields.string("format") == "F32LE", fields.string("layout") ?? "interleaved" == "interleaved" else {
            throw unsupported(
                "only interleaved F32LE is published as pcm (put audioconvert ! audio/x-raw,format=F32LE before moqsink)"
            )
        }
        var info = GstAudioInfo()
        guard gst_audio_info_from_caps(&info, caps) != 0, info.rate > 0, info.channels > 0, info.channels <= 8 else {
            throw missing("rate and channels (1 to 8)")
        }
        let channels = Int(info.channels)
        if channels > 2, !PCMLayout.isDefaultOrder(info) {
            let mask = String(PCMLayout.defaultMask(channels: channels), radix: 16)
            throw unsupported(
                "\(channels) channels must be in their default order (FL FR FC LFE RL RR SL SR): "
                    + "put audioconvert ! audio/x-raw,channel-mask=(bitmask)0x\(mask) before moqsink")
        }
        let config = AudioConfig(codec: "pcm", sampleRate: UInt32(info.rate), numberOfChannels: UInt32(channels))
        return MediaRendition(config: .audio(config), family: "pcm", layout: .pcmF32)
    }

    // MARK: AAC, MP3

    func mpegAudio() throws(MediaFormatError) -> MediaRendition {
        switch fields.int("mpegversion") {
        case 2, 4:
            let format = fields.string("stream-format") ?? "(none)"
            guard format == "raw" else {
                throw unsupported("stream-format=\(format); only raw AAC is published (put aacparse before moqsink)")
            }
            guard let asc = fields.buffer("codec_data") else { throw missing("codec_data (the AudioSpecificConfig)") }
            guard let codec = mimeCodec.flatMap(AACCodec.init) ?? AACCodec(audioSpecificConfig: asc) else {
                throw invalid("codec_data is not an AudioSpecificConfig")
            }
            let rate = fields.int("rate") ?? Int(gst_codec_utils_aac_get_sample_rate(asc, guint(asc.count)))
            let channels = fields.int("channels") ?? Int(gst_codec_utils_aac_get_channels(asc, guint(asc.count)))
            guard rate > 0, channels > 0 else { throw missing("rate and channels") }
            var config = AudioConfig(codec: codec.string, sampleRate: UInt32(rate), numberOfChannels: UInt32(channels))
            config.description = Bytes(asc)
            return MediaRendition(config: .audio(config), family: "aac", layout: .rawAAC)
        case 1 where fields.int("layer") == 3:
            // GStreamer says "mp4a.40" (AAC's prefix, no object type); WebCodecs and hang say "mp3".
            guard let rate = fields.int("rate"), rate > 0, let channels = fields.int("channels"), channels > 0 else {
                throw missing("rate and channels (put mpegaudioparse before moqsink)")
            }
            let config = AudioConfig(codec: "mp3", sampleRate: UInt32(rate), numberOfChannels: UInt32(channels))
            return MediaRendition(config: .audio(config), family: "mp3", layout: .mpegAudioFrame)
        default:
            throw unsupported(
                "only AAC (mpegversion=4, stream-format=raw) and MP3 (mpegversion=1, layer=3) are published")
        }
    }
}

/// The fields of an OpusHead (RFC 7845 §5.1) that matter here, read through pbutils.
struct OpusHead {
    var rate: UInt32
    var channels: UInt8
    var family: UInt8
    var streams: UInt8
    var coupled: UInt8
    var mapping: [UInt8]

    /// Checks the size first: `gst_codec_utils_opus_parse_header` asserts (g_critical) on short input.
    static func parse(_ bytes: [UInt8]) -> OpusHead? {
        guard bytes.count >= 19, bytes.starts(with: Array("OpusHead".utf8)) else { return nil }
        GstInitialization.ensure()
        let buffer = makeBuffer(bytes)
        defer { gst_buffer_unref(buffer) }
        var head = OpusHead(rate: 0, channels: 0, family: 0, streams: 0, coupled: 0, mapping: [])
        var mapping = [guint8](repeating: 0, count: 256)
        var preSkip: guint16 = 0
        var gain: gint16 = 0
        guard
            gst_codec_utils_opus_parse_header(
                buffer, &head.rate, &head.channels, &head.family, &head.streams, &head.coupled, &mapping, &preSkip,
                &gain) != 0, head.channels > 0
        else { return nil }
        head.mapping = Array(mapping.prefix(Int(head.channels)))
        return head
    }
}

/// Reverses `gst_codec_utils_h265_get_profile`: GStreamer's H.265 profile names and the
/// profile_tier_level that yields each, found by asking GStreamer about every combination of
/// general_profile_idc and range-extension constraint flags (so no table is written by hand).
final class H265Profiles: Sendable {
    static let shared = H265Profiles()

    private let table: [String: [UInt8]]

    private init() {
        GstInitialization.ensure()
        var table: [String: [UInt8]] = [:]
        for idc in UInt8(1)...11 {
            // Main is also decodable as Main 10 (the flags encoders set: compat "6").
            let compatibility: UInt32 = idc == 1 ? 0x6000_0000 : 1 << (31 - UInt32(idc))
            // The ten flags after the four source flags: max_12bit … max_14bit (H.265 §7.4.4).
            let flagSets: [UInt16] = idc >= 4 ? Array(0..<1024) : [0]
            for flags in flagSets {
                let c0 = UInt8(flags >> 6 & 0x0f)
                let c1 = UInt8(flags & 0x3f) << 2
                let ptl: [UInt8] = [
                    idc, UInt8(compatibility >> 24), UInt8(compatibility >> 16 & 0xff),
                    UInt8(compatibility >> 8 & 0xff),
                    UInt8(compatibility & 0xff), c0, c1, 0, 0, 0, 0, 93,
                ]
                guard let name = gst_codec_utils_h265_get_profile(ptl, guint(ptl.count)) else { continue }
                let key = String(cString: name)
                if table[key] == nil { table[key] = ptl }
            }
        }
        self.table = table
    }

    /// A profile_tier_level (level 3.1, main tier, no source flags) for a GStreamer profile name.
    func profileTierLevel(profile: String) -> [UInt8]? { table[profile] }

    /// Every profile name GStreamer knows.
    var names: [String] { Array(table.keys) }
}

func gcd(_ a: Int64, _ b: Int64) -> Int64 {
    var (a, b) = (abs(a), abs(b))
    while b != 0 { (a, b) = (b, a % b) }
    return max(a, 1)
}

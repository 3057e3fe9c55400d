// SPDX-License-Identifier: MIT
package import CGStreamer
import CGstPbutils
import GstSupport
public import MoqCatalog
import MoqWire

extension MediaFormat {
    /// The caps `moqsrc` sets on the pad of a rendition: what the matching parser and
    /// decoder accept (`h264parse ! avdec_h264`, `av1parse ! av1dec`, `opusdec`, …).
    ///
    /// - Throws: ``MediaFormatError`` ("skipped: …") for an unknown codec, a container other
    ///   than legacy, or a rendition missing what its codec needs.
    public static func caps(for config: RenditionConfig) throws(MediaFormatError) -> String {
        let caps = try makeCaps(for: config)
        defer { gst_caps_unref(caps) }
        return capsString(caps)
    }

    /// How the frame payloads of a rendition are laid out (the buffers `moqsrc` pushes).
    public static func layout(for config: RenditionConfig) throws(MediaFormatError) -> BufferLayout {
        try CapsBuilder(config).layout
    }

    /// The caps of a rendition (transfer full: the caller unrefs them).
    package static func makeCaps(for config: RenditionConfig) throws(MediaFormatError) -> UnsafeMutablePointer<GstCaps>
    {
        GstInitialization.ensure()
        return try CapsBuilder(config).build()
    }

    /// The renditions of a received catalog `moqsrc` can play, in catalog order, with their caps;
    /// and the others with the reason each is skipped (malformed, carried by another broadcast,
    /// unknown codec or container).
    public static func playable(in catalog: HangCatalog) -> (playable: [PlayableRendition], skipped: [SkippedRendition])
    {
        var playable: [PlayableRendition] = []
        var skipped: [SkippedRendition] = []
        for rendition in catalog.renditions {
            let broadcast: String?
            switch rendition.config {
            case .video(let v): broadcast = v.broadcast
            case .audio(let a): broadcast = a.broadcast
            }
            if let broadcast, !broadcast.isEmpty {
                skipped.append(
                    SkippedRendition(
                        kind: rendition.config.kind, name: rendition.name,
                        reason: "skipped: carried by broadcast \"\(broadcast)\""))
                continue
            }
            do {
                let builder = try CapsBuilder(rendition.config)
                let caps = try builder.build()
                defer { gst_caps_unref(caps) }
                playable.append(PlayableRendition(rendition: rendition, caps: capsString(caps), layout: builder.layout))
            } catch {
                skipped.append(
                    SkippedRendition(kind: rendition.config.kind, name: rendition.name, reason: error.description))
            }
        }
        for issue in catalog.issues {
            skipped.append(SkippedRendition(kind: issue.kind, name: issue.name, reason: "skipped: \(issue.error)"))
        }
        return (playable, skipped)
    }
}

/// A rendition being turned into caps: validated on init, built by ``build()``.
private struct CapsBuilder {
    enum Codec {
        case h264(H264Codec)
        case h265(H265Codec)
        case av1(AV1Codec)
        case vp8
        case vp9(VP9Codec)
        case opus(OpusHead?)
        case aac(AACCodec)
        case mp3
        case flac(streamHeader: [UInt8])
        case pcm
    }

    let config: RenditionConfig
    let codec: Codec
    let layout: BufferLayout

    init(_ config: RenditionConfig) throws(MediaFormatError) {
        GstInitialization.ensure()
        self.config = config
        let name = config.codec
        var description = config.description?.array
        func invalid(_ reason: String) -> MediaFormatError { .invalidRendition(codec: name, reason: reason) }
        switch config.container.kind {
        case .legacy: break
        case .cmaf(let initSegment):
            // Each frame is a moof+mdat whose samples are laid out as in the legacy container
            // (length-prefixed NAL units for avc1/hvc1, raw packets for audio); the decoder
            // configuration may come from the init segment instead of `description`.
            let track: CMAFTrack
            do {
                let parsed = try CMAFInit(initSegment)
                guard parsed.tracks.count == 1 else {
                    throw invalid("the CMAF init segment has \(parsed.tracks.count) tracks")
                }
                track = parsed.tracks[0]
            } catch let error as MediaFormatError {
                throw error
            } catch {
                throw invalid("\(error)")
            }
            if description == nil, let configuration = track.configuration,
                ["avc1", "avc3", "hvc1", "hev1"].contains(track.sampleEntry)
            {
                description = configuration.array
            }
        default:
            throw .unsupportedContainer(kind: config.container.kindName ?? "(no kind)")
        }
        switch config {
        case .video:
            if name.hasPrefix("avc1.") || name.hasPrefix("avc3.") {
                guard let codec = H264Codec(name) else { throw invalid("malformed codec string") }
                self.codec = .h264(codec)
                if let description {
                    guard description.count >= 7, description[0] == 1 else { throw invalid("description is not avcC") }
                    layout = .lengthPrefixed(lengthSize: Int(description[4] & 3) + 1)
                } else {
                    layout = .annexB
                }
            } else if name.hasPrefix("hvc1.") || name.hasPrefix("hev1.") {
                guard let codec = H265Codec(name) else { throw invalid("malformed codec string") }
                self.codec = .h265(codec)
                if let description {
                    guard description.count >= 23, description[0] == 1 else { throw invalid("description is not hvcC") }
                    layout = .lengthPrefixed(lengthSize: Int(description[21] & 3) + 1)
                } else {
                    layout = .annexB
                }
            } else if name.hasPrefix("av01.") {
                guard let codec = AV1Codec(name) else { throw invalid("malformed codec string") }
                if let description, AV1Codec(av1C: description) == nil { throw invalid("description is not av1C") }
                self.codec = .av1(codec)
                layout = .av1TemporalUnit
            } else if name == "vp8" {
                codec = .vp8
                layout = .vpxFrame
            } else if name.hasPrefix("vp09.") {
                guard let codec = VP9Codec(name) else { throw invalid("malformed codec string") }
                self.codec = .vp9(codec)
                layout = .vpxFrame
            } else {
                throw .unsupportedCodec(codec: name)
            }
        case .audio(let audio):
            if name == "opus" {
                if let description {
                    guard let head = OpusHead.parse(description) else {
                        throw invalid("description is not an OpusHead")
                    }
                    codec = .opus(head)
                } else {
                    guard audio.numberOfChannels >= 1 && audio.numberOfChannels <= 2 else {
                        throw .incompleteRendition(
                            codec: name, missing: "description (OpusHead) for \(audio.numberOfChannels) channels")
                    }
                    codec = .opus(nil)
                }
                layout = .opusPacket
            } else if name.hasPrefix("mp4a.40.") {
                guard let codec = AACCodec(name) else { throw invalid("malformed codec string") }
                guard let description else {
                    throw .incompleteRendition(codec: name, missing: "description (AudioSpecificConfig)")
                }
                guard AACCodec(audioSpecificConfig: description) != nil else {
                    throw invalid("description is not an AudioSpecificConfig")
                }
                self.codec = .aac(codec)
                layout = .rawAAC
            } else if name == "mp3" {
                codec = .mp3
                layout = .mpegAudioFrame
            } else if name == "flac" {
                guard let description else {
                    throw .incompleteRendition(codec: name, missing: "description (fLaC and STREAMINFO)")
                }
                guard let header = FLACStreamInfo.streamHeader(fromDescription: description) else {
                    throw invalid("description is not fLaC and a STREAMINFO block")
                }
                codec = .flac(streamHeader: header)
                layout = .flacFrame
            } else if name == "pcm" {
                guard audio.numberOfChannels <= 8 else { throw invalid("\(audio.numberOfChannels) channels (1 to 8)") }
                codec = .pcm
                layout = .pcmF32
            } else {
                throw .unsupportedCodec(codec: name)
            }
            guard audio.sampleRate > 0, audio.sampleRate <= Int32.max, audio.numberOfChannels > 0,
                audio.numberOfChannels <= 255
            else { throw invalid("sample rate \(audio.sampleRate), \(audio.numberOfChannels) channels") }
        }
    }

    func build() throws(MediaFormatError) -> UnsafeMutablePointer<GstCaps> {
        let description = config.description?.array ?? []
        var text: String
        var buffer: String { hexString(description) }
        switch codec {
        case .h264(let h264):
            let format = description.isEmpty ? "byte-stream" : h264.inBand ? "avc3" : "avc"
            text = "video/x-h264, stream-format=(string)\(format), alignment=(string)au"
            if !description.isEmpty { text += ", codec_data=(buffer)\(buffer)" }
        case .h265(let h265):
            let format = description.isEmpty ? "byte-stream" : h265.family
            text = "video/x-h265, stream-format=(string)\(format), alignment=(string)au"
            if !description.isEmpty { text += ", codec_data=(buffer)\(buffer)" }
        case .av1(let av1):
            text = "video/x-av1, stream-format=(string)obu-stream, alignment=(string)tu"
            if let profile = av1.profileName { text += ", profile=(string)\(profile)" }
            if !description.isEmpty { text += ", codec_data=(buffer)\(buffer)" }
        case .vp8:
            text = "video/x-vp8"
        case .vp9(let vp9):
            text = "video/x-vp9, profile=(string)\(vp9.profile)"
        case .opus(let head?):
            guard let audio = audioConfig else { throw .unsupportedCodec(codec: config.codec) }
            text = try opusCaps(rate: audio.sampleRate, head: head)
            // The OpusHead travels as streamheader so opusdec keeps its pre-skip and gain.
            text += ", streamheader=(buffer)< \(buffer), \(hexString(OpusTags.minimal)) >"
        case .opus(nil):
            guard let audio = audioConfig else { throw .unsupportedCodec(codec: config.codec) }
            let channels = UInt8(audio.numberOfChannels)
            let head = OpusHead(
                rate: audio.sampleRate, channels: channels, family: 0, streams: 1, coupled: channels - 1, mapping: [])
            text = try opusCaps(rate: audio.sampleRate, head: head)
        case .aac:
            text = "audio/mpeg, mpegversion=(int)4, stream-format=(string)raw, framed=(boolean)true"
            text += ", codec_data=(buffer)\(buffer)"
        case .mp3:
            text = "audio/mpeg, mpegversion=(int)1, layer=(int)3, parsed=(boolean)true"
        case .flac(let header):
            text = "audio/x-flac, framed=(boolean)true, streamheader=(buffer)< \(hexString(header)) >"
        case .pcm:
            guard let audio = audioConfig else { throw .unsupportedCodec(codec: config.codec) }
            text = "audio/x-raw, format=(string)F32LE, layout=(string)interleaved"
            if audio.numberOfChannels > 1 {
                let mask = PCMLayout.defaultMask(channels: Int(audio.numberOfChannels))
                text += ", channel-mask=(bitmask)0x\(String(mask, radix: 16))"
            }
        }
        switch config {
        case .video(let video):
            if let w = video.codedWidth, let h = video.codedHeight, w > 0, h > 0, w <= Int32.max, h <= Int32.max {
                text += ", width=(int)\(w), height=(int)\(h)"
                if let aw = video.displayAspectWidth, let ah = video.displayAspectHeight, aw > 0, ah > 0 {
                    let n = Int64(aw) * Int64(h)
                    let d = Int64(ah) * Int64(w)
                    let g = gcd(n, d)
                    if n / g <= Int32.max, d / g <= Int32.max {
                        text += ", pixel-aspect-ratio=(fraction)\(n / g)/\(d / g)"
                    }
                }
            }
            if let fps = video.framerate, fps.isFinite, fps > 0, fps < 1_000_000 {
                var n: gint = 0
                var d: gint = 0
                gst_util_double_to_fraction(fps, &n, &d)
                if n > 0, d > 0 { text += ", framerate=(fraction)\(n)/\(d)" }
            }
        case .audio(let audio):
            if case .opus = codec {
            } else {
                text += ", rate=(int)\(audio.sampleRate), channels=(int)\(audio.numberOfChannels)"
            }
        }
        guard let caps = gst_caps_from_string(text) else {
            throw .invalidRendition(codec: config.codec, reason: "GStreamer rejects caps \(abbreviated(text))")
        }
        // Fill in profile/level (and tier) the way the GStreamer parsers name them.
        switch codec {
        case .h264(let h264):
            _ = gst_codec_utils_h264_caps_set_level_and_profile(caps, h264.spsPrefix, 3)
        case .h265(let h265):
            _ = gst_codec_utils_h265_caps_set_level_tier_and_profile(caps, h265.profileTierLevel, 12)
        case .aac:
            _ = gst_codec_utils_aac_caps_set_level_and_profile(caps, description, guint(description.count))
        default:
            break
        }
        return caps
    }

    private var audioConfig: AudioConfig? {
        if case .audio(let audio) = config { return audio }
        return nil
    }

    /// `gst_codec_utils_opus_create_caps`, at the catalog's sample rate.
    private func opusCaps(rate: UInt32, head: OpusHead) throws(MediaFormatError) -> String {
        let mapping = head.mapping + [UInt8](repeating: 0, count: 256 - head.mapping.count)
        let created = mapping.withUnsafeBufferPointer {
            gst_codec_utils_opus_create_caps(
                rate, head.channels, head.family, head.streams, head.coupled, head.family == 0 ? nil : $0.baseAddress)
        }
        guard let caps = created else {
            throw .invalidRendition(codec: "opus", reason: "GStreamer rejects the channel mapping")
        }
        defer { gst_caps_unref(caps) }
        return capsString(caps)
    }
}

/// A minimal OpusTags packet (RFC 7845 §5.2): vendor "SwiftMoQ", no comments.
enum OpusTags {
    static let minimal: [UInt8] = Array("OpusTags".utf8) + [8, 0, 0, 0] + Array("SwiftMoQ".utf8) + [0, 0, 0, 0]
}

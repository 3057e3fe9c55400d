// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog
import MoqWire
import Testing

@testable import MoqMedia

/// Real encoder output, as moqsink receives it, mapped to catalog renditions; each rendition is
/// then mapped back to caps (as moqsrc would) and decoded from the same buffers.
@Suite struct VideoCapsTests {
    @Test func h264Avc() throws {
        let encoded = try encode(video() + " ! x264enc ! h264parse ! video/x-h264,stream-format=avc")
        let r = try encoded.rendition()
        let v = try #require(r.video)
        let avcC = try #require(v.description).array
        // The codec string is the avcC's profile, constraint flags and level, in lowercase.
        #expect(v.codec == "avc1." + hexString(Array(avcC[1...3])))
        #expect(v.codec == "avc1.640014")
        #expect(r.family == "avc1")
        #expect(r.layout == .lengthPrefixed(lengthSize: 4))
        #expect(!r.isProvisional)
        #expect(v.codedWidth == 320 && v.codedHeight == 240 && v.framerate == 30)
        #expect(v.displayAspectWidth == nil)
        #expect(v.container == .legacy)
        // Buffers really are AVCC: the length prefixes tile each buffer exactly.
        for buffer in encoded.buffers { #expect(tilesWithLengthPrefixes(buffer, size: 4)) }
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers) == encoded.buffers.count)
    }

    @Test func h264ByteStream() throws {
        let encoded = try encode(
            video() + " ! x264enc ! video/x-h264,profile=constrained-baseline ! h264parse"
                + " ! video/x-h264,stream-format=byte-stream,alignment=au")
        let r = try encoded.rendition()
        // GStreamer's own string here is a bare "avc1"; ours is avc3 from the caps' profile and level…
        #expect(r.codec == "avc3.42c015")
        #expect(r.family == "avc3")
        #expect(r.layout == .annexB)
        #expect(r.codecDescription == nil)
        #expect(r.isProvisional)
        // …and the SPS of the first keyframe gives the exact one.
        let key = encoded.buffers[0]
        #expect(key.starts(with: [0, 0, 0, 1]))
        let refined = r.refined(withKeyframe: Bytes(key))
        #expect(!refined.isProvisional)
        #expect(refined.codec == "avc3." + spsBytes(key))
        #expect(refined.codec == "avc3.42c015")
        try roundTrip(refined)
        #expect(try decode(refined.config, encoded.buffers) == encoded.buffers.count)
    }

    @Test func h264HighByteStreamFromCaps() throws {
        let encoded = try encode(video(1) + " ! x264enc ! h264parse ! video/x-h264,stream-format=byte-stream")
        let r = try encoded.rendition()
        #expect(r.codec == "avc3.640014")
        #expect(r.refined(withKeyframe: Bytes(encoded.buffers[0])).codec == "avc3.640014")
        try roundTrip(r)
    }

    @Test func h264Avc3() throws {
        let encoded = try encode(video(2) + " ! x264enc ! h264parse ! video/x-h264,stream-format=avc3")
        let r = try encoded.rendition()
        #expect(r.codec == "avc3.640014")
        #expect(r.family == "avc3")
        #expect(r.codecDescription != nil)
        #expect(r.layout == .lengthPrefixed(lengthSize: 4))
        try roundTrip(r)
    }

    @Test(arguments: ["hvc1", "hev1"]) func h265WithHvcC(format: String) throws {
        let encoded = try encode(
            video()
                + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=\(format)"
        )
        let r = try encoded.rendition()
        let v = try #require(r.video)
        #expect(v.codec == "\(format).1.6.L63.90")
        // GStreamer's string for the same caps, in its own spelling.
        #expect(H265Codec(gstMimeCodec(encoded.caps) ?? "")?.string == v.codec)
        let hvcC = try #require(v.description).array
        #expect(hvcC[0] == 1 && hvcC.count > 23)
        #expect(r.family == format)
        #expect(r.layout == .lengthPrefixed(lengthSize: 4))
        for buffer in encoded.buffers { #expect(tilesWithLengthPrefixes(buffer, size: 4)) }
        #expect(!r.isProvisional)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers) == encoded.buffers.count)
    }

    @Test func h265ByteStream() throws {
        let encoded = try encode(
            video()
                + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=byte-stream"
        )
        let r = try encoded.rendition()
        #expect(r.codec == "hev1.1.6.L63.90")
        #expect(r.family == "hev1")
        #expect(r.layout == .annexB)
        #expect(r.isProvisional)
        let refined = r.refined(withKeyframe: Bytes(encoded.buffers[0]))
        #expect(!refined.isProvisional)
        #expect(refined.codec == "hev1.1.6.L63.90")
        try roundTrip(refined)
        #expect(try decode(refined.config, encoded.buffers) == encoded.buffers.count)
    }

    /// x265 picks a range-extension profile for 12-bit 4:4:4: the constraint flags matter.
    @Test func h265RangeExtension() throws {
        let raw = "videotestsrc num-buffers=1 ! video/x-raw,format=Y444_12LE,width=64,height=48,framerate=30/1"
        let hvc1 = try encode(
            raw + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=hvc1"
        ).rendition()
        #expect(hvc1.codec == "hvc1.4.10.L63.98.8")  // GStreamer: hvc1.4.10.L63.98.08
        let stream = try encode(
            raw
                + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=byte-stream"
        )
        let provisional = try stream.rendition()
        #expect(H265Codec(provisional.codec)?.profileIDC == 4)
        let refined = provisional.refined(withKeyframe: Bytes(stream.buffers[0]))
        #expect(refined.codec == "hev1.4.10.L63.98.8")
        try roundTrip(refined)
    }

    @Test func av1() throws {
        let encoded = try encode(
            video(2, width: 160, height: 120) + " ! av1enc cpu-used=8 usage-profile=realtime ! av1parse")
        let r = try encoded.rendition()
        #expect(r.family == "av01")
        #expect(r.layout == .av1TemporalUnit)
        #expect(r.codecDescription == nil)  // av1enc/av1parse 1.22 give no av1C
        #expect(r.isProvisional)
        // From caps: main profile, 8-bit, bt601 colorimetry, level 2.0 from the picture size.
        #expect(r.codec == "av01.0.00M.08.0.110.06.06.06.0")
        let refined = r.refined(withKeyframe: Bytes(encoded.buffers[0]))
        #expect(!refined.isProvisional)
        let exact = try #require(AV1Codec(refined.codec))
        #expect(exact.profile == 0 && exact.level == 0 && exact.bitDepth == 8 && !exact.monochrome)
        // aom writes no colour description: unspecified (2), as the Rust importer reads it.
        #expect(refined.codec == "av01.0.00M.08.0.110.02.02.02.0")
        #expect(exact.subsamplingX && exact.subsamplingY)
        #expect(try decode(refined.config, encoded.buffers) == encoded.buffers.count)
    }

    @Test func av1WithAv1C() throws {
        // av1C: marker/version 0x81, profile 0 level 8 (4.0), main tier, 10-bit 4:2:0 colocated (position 2).
        let caps =
            "video/x-av1, stream-format=obu-stream, alignment=tu, codec_data=(buffer)81084e00, width=1920,"
            + " height=1080, framerate=60/1"
        let r = try MediaFormat.rendition(forCaps: caps)
        #expect(r.codec == "av01.0.08M.10.0.112.01.01.01.0")
        #expect(r.codecDescription?.array == [0x81, 0x08, 0x4e, 0x00])
        #expect(!r.isProvisional)
        #expect(r.video?.framerate == 60)
        try roundTrip(r)
    }

    @Test func vp8() throws {
        let encoded = try encode(video() + " ! vp8enc deadline=1")
        let r = try encoded.rendition()
        #expect(gstMimeCodec(encoded.caps) == "vp08")  // GStreamer's spelling
        #expect(r.codec == "vp8")
        #expect(r.family == "vp8")
        #expect(r.layout == .vpxFrame)
        #expect(r.codecDescription == nil)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers) == encoded.buffers.count)
    }

    @Test func vp9() throws {
        let encoded = try encode(video() + " ! vp9enc deadline=1")
        #expect(gstMimeCodec(encoded.caps) == "vp09")  // no profile fields: GStreamer gives up
        let r = try encoded.rendition()
        // Level 2.0 from 320×240 as the Rust importer computes it.
        #expect(r.codec == "vp09.00.20.08")
        #expect(r.family == "vp9")
        #expect(r.layout == .vpxFrame)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers) == encoded.buffers.count)
    }

    @Test func vp9Parsed() throws {
        let encoded = try encode(video(1) + " ! vp9enc deadline=1 ! vp9parse")
        // GStreamer fills the colour fields from vp9parse's caps but always writes level 10.
        #expect(gstMimeCodec(encoded.caps) == "vp09.00.10.08.01.06.06.06.00")
        #expect(try encoded.rendition().codec == "vp09.00.20.08.01.06.06.06.00")
    }

    @Test func pixelAspectRatioBecomesDisplayAspect() throws {
        let r = try MediaFormat.rendition(
            forCaps: "video/x-vp8, width=(int)720, height=(int)576, pixel-aspect-ratio=(fraction)16/15")
        #expect(r.video?.displayAspectWidth == 4 && r.video?.displayAspectHeight == 3)
        let caps = try MediaFormat.caps(for: r.config)
        #expect(capsEqual(caps, "video/x-vp8, width=720, height=576, pixel-aspect-ratio=16/15"))
    }
}

@Suite struct AudioCapsTests {
    @Test func opus() throws {
        let encoded = try encode(audio() + " ! opusenc")
        let r = try encoded.rendition()
        let a = try #require(r.audio)
        #expect(a.codec == "opus")
        #expect(a.sampleRate == 48000 && a.numberOfChannels == 2)
        // The OpusHead is the first streamheader buffer, as in moq-lite-06.md §6.3.
        #expect(a.description?.array == hex("4f707573486561640102380180bb0000000000"))
        #expect(r.family == "opus")
        #expect(r.layout == .opusPacket)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers, frame: 20_000_000) == encoded.buffers.count)
    }

    @Test func opusSurround() throws {
        let encoded = try encode(audio(channels: 6) + " ! opusenc")
        let r = try encoded.rendition()
        #expect(r.audio?.numberOfChannels == 6)
        let description = try #require(r.codecDescription)
        let head = try #require(OpusHead.parse(description.array))
        #expect(head.family == 1 && head.streams == 4 && head.coupled == 2)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers, frame: 20_000_000) == encoded.buffers.count)
    }

    @Test func opusWithoutStreamheader() throws {
        // As rtpopusdepay gives it: the OpusHead is built by gst_codec_utils_opus_create_header.
        let r = try MediaFormat.rendition(forCaps: "audio/x-opus, rate=48000, channels=2, channel-mapping-family=0")
        #expect(r.codecDescription?.array == hex("4f707573486561640102000080bb0000000000"))
        #expect(throws: MediaFormatError.self) {
            try MediaFormat.rendition(forCaps: "audio/x-opus, rate=48000, channels=6, channel-mapping-family=1")
        }
    }

    @Test(arguments: ["avenc_aac", "voaacenc"]) func aac(encoder: String) throws {
        let encoded = try encode(
            audio(rate: 44100, channels: 1) + " ! \(encoder) ! aacparse ! audio/mpeg,stream-format=raw")
        let r = try encoded.rendition()
        let a = try #require(r.audio)
        #expect(a.codec == "mp4a.40.2")
        #expect(a.sampleRate == 44100 && a.numberOfChannels == 1)
        #expect(a.description?.array.prefix(2) == [0x12, 0x08])  // AAC-LC, 44.1 kHz, mono
        #expect(r.family == "aac")
        #expect(r.layout == .rawAAC)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers, frame: 23_219_955) > 0)
    }

    @Test func aacObjectTypes() throws {
        for (asc, codec) in [("2b920800", "mp4a.40.5"), ("eb090000", "mp4a.40.29"), ("f8000000", "mp4a.40.32")] {
            let r = try MediaFormat.rendition(
                forCaps:
                    "audio/mpeg, mpegversion=4, stream-format=raw, rate=48000, channels=2, codec_data=(buffer)\(asc)")
            #expect(r.codec == codec)
        }
    }

    @Test func mp3() throws {
        let encoded = try encode(audio(rate: 44100) + " ! lamemp3enc ! mpegaudioparse")
        let r = try encoded.rendition()
        #expect(r.codec == "mp3")  // GStreamer says "mp4a.40"
        #expect(r.family == "mp3")
        #expect(r.audio?.sampleRate == 44100)
        try roundTrip(r)
        #expect(try decode(r.config, encoded.buffers, frame: 26_122_448) > 0)
    }
}

@Suite struct CapsErrorTests {
    func error(_ caps: String) -> MediaFormatError? {
        do {
            _ = try MediaFormat.rendition(forCaps: caps)
            return nil
        } catch {
            return error
        }
    }

    @Test func unsupportedMediaType() {
        let e = error("video/x-raw, format=I420, width=64, height=48")
        guard case .unsupportedCaps(let caps, let reason)? = e else {
            Issue.record("\(String(describing: e))")
            return
        }
        #expect(caps.hasPrefix("video/x-raw"))
        #expect(reason.contains("video/x-raw is not published"))
        #expect(e!.description.contains("video/x-raw"))
    }

    @Test func missingCodecData() {
        let e = error("video/x-h264, stream-format=avc, alignment=au, width=320, height=240")
        #expect(
            e
                == .incompleteCaps(
                    caps:
                        "video/x-h264, stream-format=(string)avc, alignment=(string)au, width=(int)320, height=(int)240",
                    missing: "codec_data (the avcC record)"))
        #expect(error("video/x-h265, stream-format=hvc1, alignment=au")?.description.contains("hvcC") == true)
        #expect(
            error("audio/mpeg, mpegversion=4, stream-format=raw, rate=48000, channels=2")?.description.contains(
                "AudioSpecificConfig") == true)
    }

    @Test func byteStreamWithoutProfile() {
        let e = error("video/x-h264, stream-format=byte-stream, alignment=au")
        #expect(e?.description.contains("missing profile and level (put h264parse before moqsink)") == true)
    }

    @Test func wrongAlignmentOrFormat() {
        #expect(
            error("video/x-h264, stream-format=byte-stream, alignment=nal, profile=high, level=4")?.description
                .contains("alignment=nal") == true)
        #expect(
            error("audio/mpeg, mpegversion=4, stream-format=adts, rate=48000, channels=2")?.description.contains(
                "aacparse") == true)
        #expect(error("video/x-av1, stream-format=annexb, alignment=tu")?.description.contains("obu-stream") == true)
        #expect(error("audio/mpeg, mpegversion=1, layer=2, rate=48000, channels=2") != nil)
    }

    @Test func invalidCodecData() {
        guard
            case .invalidCodecData? = error(
                "video/x-h264, stream-format=avc, alignment=au, codec_data=(buffer)00112233")
        else {
            Issue.record("avcC")
            return
        }
        guard case .invalidCodecData? = error("video/x-av1, codec_data=(buffer)00") else {
            Issue.record("av1C")
            return
        }
        guard case .invalidCodecData? = error("audio/x-opus, rate=48000, channels=2, streamheader=(buffer)< 4f707573 >")
        else {
            Issue.record("OpusHead")
            return
        }
    }

    @Test func notFixedAndUnparsable() {
        guard case .notFixed? = error("video/x-vp8, width=[1, 100]") else {
            Issue.record("not fixed")
            return
        }
        #expect(error("not caps, ,=") == .unparsableCaps("not caps, ,="))
        #expect(
            error("audio/x-opus, channels=2")
                == .incompleteCaps(caps: "audio/x-opus, channels=(int)2", missing: "rate and channels"))
    }
}

// MARK: - Helpers

/// rendition → caps (moqsrc) → rendition (moqsink) gives the same rendition back.
func roundTrip(_ r: MediaRendition, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let caps = try MediaFormat.caps(for: r.config)
    let back = try MediaFormat.rendition(forCaps: caps)
    #expect(back.config == r.config, "through \(caps)", sourceLocation: sourceLocation)
    #expect(back.family == r.family, sourceLocation: sourceLocation)
    #expect(back.layout == r.layout, sourceLocation: sourceLocation)
    #expect(try MediaFormat.layout(for: r.config) == r.layout, sourceLocation: sourceLocation)
}

func gstMimeCodec(_ caps: UnsafeMutablePointer<GstCaps>) -> String? {
    MediaFormat.mimeCodec(caps)
}

/// True when `buffer` is a sequence of NAL units each preceded by a `size`-byte length.
func tilesWithLengthPrefixes(_ buffer: [UInt8], size: Int) -> Bool {
    var i = 0
    while i + size <= buffer.count {
        var length = 0
        for b in buffer[i..<i + size] { length = length << 8 | Int(b) }
        guard length > 0 else { return false }
        i += size + length
    }
    return i == buffer.count
}

/// The profile/constraints/level bytes after the first SPS NAL header of an Annex-B buffer.
func spsBytes(_ buffer: [UInt8]) -> String {
    for i in 0..<(buffer.count - 6) where buffer[i..<i + 3] == [0, 0, 1] && buffer[i + 3] & 0x1f == 7 {
        return hexString(Array(buffer[i + 4..<i + 7]))
    }
    return ""
}

/// Keyframe parsing reads untrusted bytes: truncated or garbage input must leave the rendition as it was.
@Suite struct KeyframeRobustnessTests {
    @Test func truncatedAndGarbageKeyframes() throws {
        let sources = [
            video(1) + " ! x264enc ! h264parse ! video/x-h264,stream-format=byte-stream",
            video(1)
                + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=byte-stream",
            video(1, width: 64, height: 48) + " ! av1enc cpu-used=8 usage-profile=realtime ! av1parse",
        ]
        var generator = SystemRandomNumberGenerator()
        for pipeline in sources {
            let encoded = try encode(pipeline)
            let r = try encoded.rendition()
            let key = encoded.buffers[0]
            let exact = r.refined(withKeyframe: Bytes(key)).codec
            // Every prefix either finds the parameter set or leaves the provisional string.
            for length in stride(from: 0, through: min(key.count, 400), by: 1) {
                let refined = r.refined(withKeyframe: Bytes(key.prefix(length)))
                #expect(refined.codec == exact || (refined.codec == r.codec && refined.isProvisional))
            }
            for _ in 0..<200 {
                var noise = key.prefix(64).map { _ in UInt8.random(in: 0...255, using: &generator) }
                noise.insert(contentsOf: [0, 0, 1, 0x67, 0x40, 0x01, 0x12, 0x00], at: 0)
                _ = r.refined(withKeyframe: Bytes(noise))
                _ = r.refined(withKeyframe: Bytes([0x0a, 0x0b] + noise))
            }
        }
    }
}

@Suite struct LosslessAudioCapsTests {
    @Test("FLAC: codec flac, the description fLaC + STREAMINFO (WebCodecs), and back to caps flacdec takes")
    func flac() throws {
        let encoded = try encode(audio(20, channels: 2) + " ! flacenc ! flacparse")
        let r = try encoded.rendition()
        let a = try #require(r.audio)
        #expect(a.codec == "flac" && a.sampleRate == 48000 && a.numberOfChannels == 2)
        let description = try #require(a.description?.array)
        #expect(description.count == 42 && Array(description.prefix(4)) == Array("fLaC".utf8))
        #expect(description[4] & 0x7F == 0 && description[7] == 34, "a STREAMINFO block of 34 bytes")
        #expect(r.layout == .flacFrame)
        try roundTrip(r)
        // flacparse's header buffers are in the description, not frames.
        let frames = encoded.buffers.filter { $0.first == 0xFF }  // a FLAC frame starts with its sync code
        #expect(try decode(r.config, frames, frame: 20_000_000) > 0)
    }

    @Test("FLAC without STREAMINFO, or a broken one: a clear error")
    func flacWithoutStreamInfo() {
        #expect(throws: MediaFormatError.self) {
            try MediaFormat.rendition(forCaps: "audio/x-flac, framed=true, rate=48000, channels=2")
        }
        #expect(throws: MediaFormatError.self) {
            try MediaFormat.rendition(
                forCaps:
                    "audio/x-flac, framed=true, rate=48000, channels=2, streamheader=(buffer)< 7f464c41430100000166 >")
        }
    }

    @Test("PCM: interleaved F32LE is hang's pcm; other layouts say what to put before moqsink")
    func pcm() throws {
        let r = try MediaFormat.rendition(
            forCaps: "audio/x-raw, format=F32LE, layout=interleaved, rate=44100, channels=6, channel-mask=(bitmask)0x3f"
        )
        #expect(r.audio?.codec == "pcm" && r.audio?.numberOfChannels == 6 && r.audio?.sampleRate == 44100)
        #expect(r.layout == .pcmF32)
        try roundTrip(r)
        let caps = try MediaFormat.makeCaps(for: r.config)
        defer { gst_caps_unref(caps) }
        #expect(capsString(caps).contains("channel-mask=(bitmask)0x000000000000003f"))
        do {
            _ = try MediaFormat.rendition(
                forCaps:
                    "audio/x-raw, format=F32LE, layout=interleaved, rate=48000, channels=6, channel-mask=(bitmask)0x60f"
            )
            Issue.record("a 5.1 layout other than the default order was accepted")
        } catch {
            #expect("\(error)".contains("audioconvert"), "\(error)")
        }
        #expect(throws: MediaFormatError.self) {
            try MediaFormat.rendition(forCaps: "audio/x-raw, format=S16LE, layout=interleaved, rate=48000, channels=2")
        }
    }
}

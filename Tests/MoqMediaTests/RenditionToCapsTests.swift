// SPDX-License-Identifier: MIT
import CGStreamer
import CGstPbutils
import Foundation
import MoqCatalog
import MoqTestFixtures
import MoqWire
import Testing

@testable import MoqMedia

@Suite struct RustCatalogCapsTests {
    let opusCaps =
        "audio/x-opus, rate=48000, channels=2, channel-mapping-family=0, stream-count=1, coupled-count=1,"
        + " streamheader=(buffer)< 4f707573486561640102380180bb0000000000,"
        + " 4f707573546167730800000053776966744d6f5100000000 >"

    @Test func avc1AndOpus() throws {
        let (playable, skipped) = MediaFormat.playable(in: try HangCatalog(json: RustCatalogs.avc1Opus))
        #expect(skipped.isEmpty)
        #expect(playable.map(\.rendition.name) == ["0.avc1", "1.opus"])
        #expect(
            capsEqual(
                playable[0].caps,
                "video/x-h264, stream-format=avc, alignment=au,"
                    + " codec_data=(buffer)0142c00dffe100116742c00d8c68141f26a0c020c0f08846a001000468ce3c80,"
                    + " profile=constrained-baseline, level=(string)1.3, width=320, height=240, framerate=30/1"),
            "\(playable[0].caps)")
        #expect(playable[0].layout == .lengthPrefixed(lengthSize: 4))
        #expect(capsEqual(playable[1].caps, opusCaps), "\(playable[1].caps)")
        #expect(playable[1].layout == .opusPacket)
    }

    @Test func avc3AndOpus() throws {
        let (playable, skipped) = MediaFormat.playable(in: try HangCatalog(json: RustCatalogs.avc3Opus))
        #expect(skipped.isEmpty)
        #expect(playable.map(\.rendition.name) == ["0.avc3", "audio"])
        // moq-gst writes stream-format=annexb here, which no GStreamer element accepts.
        #expect(
            capsEqual(
                playable[0].caps,
                "video/x-h264, stream-format=byte-stream, alignment=au, profile=constrained-baseline, level=(string)1.3,"
                    + " width=320, height=240, framerate=30/1"),
            "\(playable[0].caps)")
        #expect(playable[0].layout == .annexB)
        #expect(capsEqual(playable[1].caps, opusCaps), "\(playable[1].caps)")
    }

    /// The caps moqsrc sets for the Rust renditions give back the same renditions at moqsink.
    @Test func rustRenditionsRoundTrip() throws {
        for json in [RustCatalogs.avc1Opus, RustCatalogs.avc3Opus] {
            for rendition in try HangCatalog(json: json).renditions {
                let back = try MediaFormat.rendition(forCaps: try MediaFormat.caps(for: rendition.config))
                var expected = rendition.config
                // Transport statistics are not caps: the sink's own estimates replace them.
                switch expected {
                case .video(var v):
                    (v.bitrate, v.jitter, v.delay) = (nil, nil, nil)
                    expected = .video(v)
                case .audio(var a):
                    (a.bitrate, a.jitter, a.delay) = (nil, nil, nil)
                    expected = .audio(a)
                }
                #expect(back.config == expected, "\(rendition.name)")
                #expect(rendition.name.hasSuffix(back.family) || rendition.name == "audio")
            }
        }
    }
}

@Suite struct RenditionCapsTests {
    func caps(_ codec: String, description: String? = nil, video: Bool = true) throws -> String {
        if video {
            var v = VideoConfig(codec: codec)
            v.description = description.map { Bytes(hex($0)) }
            v.codedWidth = 640
            v.codedHeight = 360
            return try MediaFormat.caps(for: .video(v))
        }
        var a = AudioConfig(codec: codec, sampleRate: 48000, numberOfChannels: 2)
        a.description = description.map { Bytes(hex($0)) }
        return try MediaFormat.caps(for: .audio(a))
    }

    @Test func h265() throws {
        let hvcC =
            "0101600000009000000000003ff000fcfdf8f800000f03200001001840010c01ffff01600000030090000003000003003f9598092100010031420101016000000300900000030000030000"
        #expect(
            capsEqual(
                try caps("hvc1.1.6.L93.B0", description: hvcC),
                "video/x-h265, stream-format=hvc1, alignment=au, codec_data=(buffer)\(hvcC), profile=main, tier=main,"
                    + " level=(string)3.1, width=640, height=360"))
        #expect(
            capsEqual(
                try caps("hev1.1.6.L93.B0"),
                "video/x-h265, stream-format=byte-stream, alignment=au, profile=main, tier=main, level=(string)3.1, width=640,"
                    + " height=360"))
        #expect(try caps("hev1.1.6.L93.B0", description: hvcC).contains("stream-format=(string)hev1"))
    }

    @Test func av1AndVpx() throws {
        #expect(
            capsEqual(
                try caps("av01.0.04M.08"),
                "video/x-av1, stream-format=obu-stream, alignment=tu, profile=main, width=640, height=360"))
        #expect(try caps("av01.0.08M.10", description: "81084e00").contains("codec_data=(buffer)81084e00"))
        #expect(capsEqual(try caps("vp8"), "video/x-vp8, width=640, height=360"))
        #expect(capsEqual(try caps("vp09.02.41.10"), "video/x-vp9, profile=(string)2, width=640, height=360"))
    }

    @Test func aacGetsProfileAndLevelFromGStreamer() throws {
        let text = try caps("mp4a.40.2", description: "1190", video: false)
        #expect(
            capsEqual(
                text,
                "audio/mpeg, mpegversion=4, stream-format=raw, framed=true, codec_data=(buffer)1190, rate=48000,"
                    + " channels=2, level=(string)2, base-profile=lc, profile=lc"), "\(text)")
    }

    @Test func opusWithoutDescription() throws {
        #expect(
            capsEqual(
                try caps("opus", video: false),
                "audio/x-opus, rate=48000, channels=2, channel-mapping-family=0, stream-count=1, coupled-count=1"))
    }

    @Test func framerates() throws {
        var v = VideoConfig(codec: "vp8")
        v.framerate = 30000.0 / 1001.0
        #expect(try MediaFormat.caps(for: .video(v)).contains("framerate=(fraction)30000/1001"))
        v.framerate = 25
        #expect(try MediaFormat.caps(for: .video(v)).contains("framerate=(fraction)25/1"))
    }

    @Test func skippedReasons() throws {
        let json =
            #"{"video":{"renditions":{"cmaf":{"codec":"avc1.64001f","container":{"kind":"cmaf","init":"AAEC"}},"#
            + #""future":{"codec":"avc1.64001f","container":{"kind":"future"}},"h266":{"codec":"vvc1.1.L51"},"#
            + #""bad":{"codec":"avc1.xyz"},"elsewhere":{"codec":"vp8","broadcast":"./source"},"#
            + #""broken":{"codec":7},"ok":{"codec":"vp8"}}},"#
            + #""audio":{"renditions":{"aac":{"codec":"mp4a.40.2","sampleRate":48000,"numberOfChannels":2},"#
            + #""flac":{"codec":"flac","sampleRate":48000,"numberOfChannels":2}}}}"#
        let (playable, skipped) = MediaFormat.playable(in: try HangCatalog(json: json))
        #expect(playable.map(\.rendition.name) == ["ok"])
        let reasons = Dictionary(uniqueKeysWithValues: skipped.map { ($0.name, $0.reason) })
        // A CMAF init segment that is not one ("AAEC" is 3 bytes) skips the rendition, saying why.
        #expect(reasons["cmaf"]?.hasPrefix("skipped: avc1.64001f rendition is invalid: malformed CMAF") == true)
        #expect(reasons["future"] == #"skipped: container "future" is not supported (only "legacy" and "cmaf")"#)
        #expect(reasons["h266"] == #"skipped: codec "vvc1.1.L51" is not supported"#)
        #expect(reasons["bad"] == "skipped: avc1.xyz rendition is invalid: malformed codec string")
        #expect(reasons["elsewhere"] == #"skipped: carried by broadcast "./source""#)
        #expect(reasons["broken"] == #"skipped: $.video.renditions.broken.codec: expected string, found number"#)
        #expect(reasons["aac"] == "skipped: mp4a.40.2 rendition has no description (AudioSpecificConfig)")
        // FLAC is played since issue #15, given its STREAMINFO.
        #expect(reasons["flac"] == "skipped: flac rendition has no description (fLaC and STREAMINFO)")
        #expect(skipped.count == 8)
    }
}

/// GStreamer's codec helpers agree with the tables and string forms used here.
@Suite struct GStreamerAgreementTests {
    @Test func h264ProfileNames() {
        _ = gstReady
        for (name, profile) in h264Profiles {
            let sps: [UInt8] = [profile.idc, profile.constraints, 30]
            let gst = gst_codec_utils_h264_get_profile(sps, 3).map { String(cString: $0) }
            #expect(gst == name, "\(name): GStreamer says \(gst ?? "nil")")
        }
    }

    @Test func h265ProfileNames() {
        let names = H265Profiles.shared.names
        #expect(names.count >= 20)
        for name in names {
            let ptl = H265Profiles.shared.profileTierLevel(profile: name)!
            #expect(gst_codec_utils_h265_get_profile(ptl, 12).map { String(cString: $0) } == name)
        }
        for name in ["main", "main-10", "main-12", "main-444", "main-444-10", "main-422-10", "main-still-picture"] {
            #expect(names.contains(name), "\(name)")
        }
    }

    /// GStreamer's HEVC strings parse, and re-written they differ only in hang's spelling.
    @Test func h265Spelling() {
        for (gst, hang) in [
            ("hvc1.1.6.L93.B0", "hvc1.1.6.L93.B0"), ("hev1.4.10.L63.98.08", "hev1.4.10.L63.98.8"),
            ("hvc1.A4.41.H120.B0.23", "hvc1.A4.41.H120.B0.23"), ("hvc1.1.6.L150.00.00", "hvc1.1.6.L150"),
        ] {
            #expect(H265Codec(gst)?.string == hang)
        }
    }

    @Test func codecStringForms() {
        // hang's own test vectors.
        for s in [
            "avc1.42c01e", "avc3.42c01e", "hev1.1.6.L93.B0", "hev1.A4.41.H120.B0.23", "hvc1.A1.6.H93.B0",
            "hvc1.1.0.L93", "hvc1.1.106.L93",
        ] {
            #expect((H264Codec(s)?.string ?? H265Codec(s)?.string) == s, "\(s)")
        }
        for s in ["av01.0.04M.10.0.112.09.16.09.0", "av01.0.01M.08"] { #expect(AV1Codec(s)?.string == s) }
        for s in ["vp09.02.10.10.01.09.16.09.01", "vp09.00.41.08"] { #expect(VP9Codec(s)?.string == s) }
        #expect(VP9Codec("vp09.00.41.08.01.01.01.01.00")?.string == "vp09.00.41.08")
        for bad in ["avc1.42c0", "avc2.42c01e", "hvc1.1.6", "hvc1.1.6.X93", "av01.3.04M.08", "vp09.00.41"] {
            #expect(H264Codec(bad) == nil && H265Codec(bad) == nil && AV1Codec(bad) == nil && VP9Codec(bad) == nil)
        }
        #expect(VP9Codec.level(width: 320, height: 240) == 20)  // the Rust importer's test value
    }
}

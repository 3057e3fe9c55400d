// SPDX-License-Identifier: MIT
import MoqPipeline

/// How video is encoded for a ``Publisher`` (moq-kit's `VideoEncoderConfig`, with Linux's codecs).
public struct VideoEncoderConfig: Sendable, Equatable {
    /// A video codec and the GStreamer encoder that makes it.
    public enum Codec: String, Sendable, CaseIterable {
        /// H.264 with x264enc.
        case h264
        /// H.265 with x265enc.
        case h265
        /// VP8 with vp8enc.
        case vp8
        /// VP9 with vp9enc.
        case vp9
        /// AV1 with av1enc (libaom).
        case av1

        /// The encoder element.
        public var encoder: String {
            switch self {
            case .h264: "x264enc"
            case .h265: "x265enc"
            case .vp8: "vp8enc"
            case .vp9: "vp9enc"
            case .av1: "av1enc"
            }
        }
    }

    /// How H.264/H.265 access units travel.
    public enum NALUFormat: String, Sendable {
        /// Annex-B with parameter sets in band (`avc3`/`hev1`): a late joiner needs nothing else.
        case annexB
        /// Length-prefixed with the parameter sets in the catalog (`avc1`/`hvc1`).
        case avcc
    }

    /// What the picture is: tunes the encoder (WebRTC's `contentHint`).
    public enum ContentHint: String, Sendable {
        /// Camera-like content: smooth motion matters most.
        case motion
        /// Screen content: text and lines must stay sharp (x264/x265 `stillimage` tuning).
        case detail
    }

    /// The codec (default H.264).
    public var codec: Codec
    /// Output width in pixels; 0 keeps the source's.
    public var width: Int
    /// Output height in pixels; 0 keeps the source's.
    public var height: Int
    /// Motion or detail.
    public var contentHint: ContentHint
    /// Target bitrate in bit/s.
    public var bitrate: Int
    /// Time between keyframes: each starts a group, so a new subscriber waits at most this long.
    public var keyframeInterval: Duration
    /// Frame rate cap.
    public var maxFrameRate: Int
    /// An H.264/H.265 profile (`baseline`, `main`, `high`…); the encoder's default when nil.
    public var profileLevel: String?
    /// H.264/H.265 framing.
    public var naluFormat: NALUFormat
    /// An adaptive-bitrate ladder: when not empty, the track is published once per rung (one
    /// source, one encoder each, keyframes aligned by moqsink every ``keyframeInterval``), as
    /// `<track>/<rung name>` renditions of one catalog section; players choose among them
    /// (moqsrc's `abr`). The config's own size and bitrate are then unused.
    public var ladder: [LadderRung] = []

    /// One rendition of a ladder.
    public struct LadderRung: Sendable, Equatable {
        /// Its name (the track is `<track>/<name>`), e.g. `720p`.
        public var name: String
        public var width: Int
        public var height: Int
        /// Target bitrate in bit/s.
        public var bitrate: Int

        public init(name: String, width: Int, height: Int, bitrate: Int) {
            self.name = name
            self.width = width
            self.height = height
            self.bitrate = bitrate
        }

        /// The issue's ladder for a 720p camera: 3.5 / 1.2 / 0.4 Mbit/s at 720p, 360p, 180p.
        public static let camera720p: [LadderRung] = [
            LadderRung(name: "720p", width: 1280, height: 720, bitrate: 3_500_000),
            LadderRung(name: "360p", width: 640, height: 360, bitrate: 1_200_000),
            LadderRung(name: "180p", width: 320, height: 180, bitrate: 400_000),
        ]

        /// `NAME:WxH@BPS` (e.g. `720p:1280x720@3500000`; the name defaults to `<H>p`).
        public init?(parsing text: String) {
            var rest = Substring(text)
            var name: String?
            if let colon = rest.firstIndex(of: ":") {
                name = String(rest[..<colon])
                rest = rest[rest.index(after: colon)...]
            }
            let sizeAndRate = rest.split(separator: "@")
            guard sizeAndRate.count == 2, let bitrate = Int(sizeAndRate[1]), bitrate > 0 else { return nil }
            let size = sizeAndRate[0].split(separator: "x")
            guard size.count == 2, let w = Int(size[0]), let h = Int(size[1]), w > 0, h > 0 else { return nil }
            self.init(name: name.flatMap { $0.isEmpty ? nil : $0 } ?? "\(h)p", width: w, height: h, bitrate: bitrate)
        }
    }

    /// This config for one rung of its ladder.
    func rung(_ rung: LadderRung) -> VideoEncoderConfig {
        var config = self
        config.ladder = []
        config.width = rung.width
        config.height = rung.height
        config.bitrate = rung.bitrate
        // moqsink's grid cuts the groups; the encoder's own GOP is only a backstop far above it.
        config.keyframeInterval = keyframeInterval * 4
        return config
    }

    /// moq-kit's defaults: H.264 1080p30 at 1.5 Mbit/s, a keyframe every 2 s, Annex-B.
    public init(
        codec: Codec = .h264, width: Int = 1920, height: Int = 1080, bitrate: Int = 1_500_000,
        keyframeInterval: Duration = .seconds(2), maxFrameRate: Int = 30, profileLevel: String? = nil,
        naluFormat: NALUFormat = .annexB, contentHint: ContentHint = .motion
    ) {
        self.contentHint = contentHint
        self.codec = codec
        self.width = width
        self.height = height
        self.bitrate = bitrate
        self.keyframeInterval = keyframeInterval
        self.maxFrameRate = maxFrameRate
        self.profileLevel = profileLevel
        self.naluFormat = naluFormat
    }

    /// True when this machine has the codec's encoder.
    public var isSupported: Bool { GStreamer.hasElement(codec.encoder) }

    /// The codecs this machine can encode.
    public static func supportedCodecs() -> [Codec] {
        GStreamer.initialize()
        return Codec.allCases.filter { GStreamer.hasElement($0.encoder) }
    }

    /// x264's tuning: low latency always, plus detail-preserving psychovisual settings for screens.
    var tune: PipelineValue {
        contentHint == .detail ? .flags(["stillimage", "zerolatency"]) : .nick("zerolatency")
    }

    var keyframeFrames: Int {
        let seconds =
            Double(keyframeInterval.components.seconds) + Double(keyframeInterval.components.attoseconds) / 1e18
        return max(1, Int((seconds * Double(maxFrameRate)).rounded()))
    }

    /// raw video → encoder → parser → the caps moqsink takes. Low-latency settings throughout:
    /// no B-frames and no lookahead, so a frame leaves the encoder as soon as it is coded.
    @PipelineBuilder var encoding: [PipelineNode] {
        if width > 0 && height > 0 {
            Caps(
                "video/x-raw",
                ["format": "I420", "width": width, "height": height, "framerate": Fraction(Int32(maxFrameRate), 1)])
        } else {
            Caps("video/x-raw", ["format": "I420", "framerate": Fraction(Int32(maxFrameRate), 1)])
        }
        switch codec {
        case .h264:
            Element("x264enc").set("tune", tune).set("speed-preset", .nick("veryfast"))
                .set("bitrate", bitrate / 1000).set("key-int-max", keyframeFrames).set("bframes", 0)
            if let profileLevel { Caps("video/x-h264", ["profile": profileLevel]) }
            Element("h264parse").set("config-interval", -1)
            Caps("video/x-h264", ["stream-format": naluFormat == .annexB ? "byte-stream" : "avc", "alignment": "au"])
        case .h265:
            Element("x265enc").set("tune", .nick("zerolatency")).set("speed-preset", .nick("veryfast"))
                .set("option-string", contentHint == .detail ? "psy-rd=0:aq-mode=0" : "")
                .set("bitrate", bitrate / 1000).set("key-int-max", keyframeFrames)
            if let profileLevel { Caps("video/x-h265", ["profile": profileLevel]) }
            Element("h265parse").set("config-interval", -1)
            Caps("video/x-h265", ["stream-format": naluFormat == .annexB ? "byte-stream" : "hvc1", "alignment": "au"])
        case .vp8, .vp9:
            Element(codec.encoder).set("deadline", 1).set("cpu-used", 8).set("end-usage", .nick("cbr"))
                .set("target-bitrate", bitrate).set("keyframe-max-dist", keyframeFrames).set("lag-in-frames", 0)
        case .av1:
            Element("av1enc").set("usage-profile", .nick("realtime")).set("cpu-used", 8).set("end-usage", .nick("cbr"))
                .set("target-bitrate", bitrate / 1000).set("keyframe-max-dist", keyframeFrames).set("lag-in-frames", 0)
            Element("av1parse")
            Caps("video/x-av1", ["stream-format": "obu-stream", "alignment": "tu"])
        }
    }
}

/// How audio is encoded for a ``Publisher`` (moq-kit's `AudioEncoderConfig`).
public struct AudioEncoderConfig: Sendable, Equatable {
    /// An audio codec and its encoder.
    public enum Codec: String, Sendable, CaseIterable {
        /// Opus with opusenc.
        case opus
        /// AAC-LC with avenc_aac (gst-libav).
        case aac

        /// The encoder element.
        public var encoder: String {
            switch self {
            case .opus: "opusenc"
            case .aac: "avenc_aac"
            }
        }
    }

    /// The codec (default Opus, as moq-kit on iOS).
    public var codec: Codec
    /// Samples per second.
    public var sampleRate: Int
    /// Channels.
    public var channels: Int
    /// Target bitrate in bit/s.
    public var bitrate: Int

    /// Opus, 48 kHz, mono, 128 kbit/s (moq-kit's defaults).
    public init(codec: Codec = .opus, sampleRate: Int = 48_000, channels: Int = 1, bitrate: Int = 128_000) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
    }

    /// True when this machine has the codec's encoder.
    public var isSupported: Bool { GStreamer.hasElement(codec.encoder) }

    /// The codecs this machine can encode.
    public static func supportedCodecs() -> [Codec] {
        GStreamer.initialize()
        return Codec.allCases.filter { GStreamer.hasElement($0.encoder) }
    }

    /// raw audio → encoder → what moqsink takes.
    @PipelineBuilder var encoding: [PipelineNode] {
        Element("audioconvert")
        Element("audioresample")
        Caps("audio/x-raw", ["rate": sampleRate, "channels": channels])
        switch codec {
        case .opus:
            Element("opusenc").set("bitrate", bitrate)
        case .aac:
            Element("avenc_aac").set("bitrate", bitrate)
            Element("aacparse")
            Caps("audio/mpeg", ["mpegversion": 4, "stream-format": "raw"])
        }
    }
}

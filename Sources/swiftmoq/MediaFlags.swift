// SPDX-License-Identifier: MIT
import MoqCommandLine
import MoqKit
import SwiftMoQ

/// The session flags of the media commands (publish, play, screen-share), as MoqKit options.
struct SessionFlags {
    let url: String
    let options: SessionOptions

    init(_ args: Arguments) throws(CommandError) {
        do { url = try args.required("url") } catch { throw .usage(error.description) }
        do { _ = try MoqURL(url) } catch { throw .usage("--url: \(error.description)") }
        var options = SessionOptions(
            tls: TLSOptions(
                fingerprint: args.value("tls-fingerprint"), rootFile: args.value("tls-root-file"),
                disableVerify: args.has("tls-disable-verify")),
            authToken: args.value("auth-token"))
        options.moqProtocol = try ClientFlags.moqProtocol(args)
        self.options = options
        Output.verbose = args.has("verbose")
        if args.has("tls-disable-verify") { Output.error("warning: TLS certificate verification is disabled") }
    }

    func connect() async throws(CommandError) -> Session {
        let session = Session(url: url, options: options)
        do { try await session.connect() } catch { throw .runtime(error.description) }
        return session
    }
}

/// `--source` values of `swiftmoq publish`.
enum SourceSpec: Equatable {
    case test
    case camera(String)
    case screen(String)
    case mic(MicrophoneCapture.System)
    case file(String)

    init(_ text: String) throws(CommandError) {
        let (kind, rest) =
            text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) }
            ?? (text, "")
        switch kind {
        case "test": self = .test
        case "camera": self = .camera(rest.isEmpty ? "/dev/video0" : rest)
        case "screen": self = .screen(rest.isEmpty ? ":0" : (rest.hasPrefix(":") ? rest : ":" + rest))
        case "mic":
            switch rest {
            case "", "auto": self = .mic(.automatic)
            case "pulse": self = .mic(.pulse)
            case "alsa": self = .mic(.alsa)
            default: throw .usage("--source mic[:pulse|alsa]: unknown audio system '\(rest)'")
            }
        case "file":
            guard !rest.isEmpty else { throw .usage("--source file:PATH needs a path") }
            self = .file(rest)
        default:
            throw .usage(
                "unknown --source '\(text)': use test, camera[:DEVICE], screen[:DISPLAY], mic[:pulse|alsa] or file:PATH"
            )
        }
    }
}

extension SourceSpec {
    /// What names this source's tracks: its kind, and what tells it apart from another source of
    /// the same kind (the device, display, audio system or file; the test pattern's ordinal).
    private var kind: String {
        switch self {
        case .test: "test"
        case .camera: "camera"
        case .screen: "screen"
        case .mic: "mic"
        case .file: "file"
        }
    }

    private func distinction(ordinal: Int) -> String {
        let raw: String
        switch self {
        case .test: raw = "\(ordinal)"
        case .camera(let device): raw = device.split(separator: "/").last.map(String.init) ?? device
        case .screen(let display): raw = display
        case .mic(let system): raw = "\(system)"
        case .file(let path):
            let base = path.split(separator: "/").last.map(String.init) ?? path
            raw = base.split(separator: ".").first.map(String.init) ?? base
        }
        // Track names travel in the catalog and in element properties: keep them plain.
        let plain = String(raw.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
        let trimmed = plain.drop { $0 == "-" }.reversed().drop { $0 == "-" }.reversed()
        return trimmed.isEmpty ? "\(ordinal)" : String(trimmed)
    }

    /// The track names of each source, in order: a kind used once keeps its plain names (`camera`,
    /// `test-video`…); a kind used more than once gets each source's distinction after them
    /// (`camera-video0`, `camera-video2`), and a counter if two sources still collide.
    static func trackNames(_ sources: [SourceSpec]) -> [(video: String, audio: String)] {
        var counts: [String: Int] = [:]
        for source in sources { counts[source.kind, default: 0] += 1 }
        var seen: [String: Int] = [:]
        var used: Set<String> = []
        func unique(_ name: String) -> String {
            var candidate = name
            var n = 2
            while used.contains(candidate) {
                candidate = "\(name)-\(n)"
                n += 1
            }
            used.insert(candidate)
            return candidate
        }
        return sources.map { source in
            let ordinal = (seen[source.kind] ?? 0) + 1
            seen[source.kind] = ordinal
            let suffix = (counts[source.kind] ?? 0) > 1 ? "-" + source.distinction(ordinal: ordinal) : ""
            let (video, audio): (String, String)
            switch source {
            case .test, .file: (video, audio) = ("\(source.kind)-video\(suffix)", "\(source.kind)-audio\(suffix)")
            case .camera, .screen: (video, audio) = ("\(source.kind)\(suffix)", "")
            case .mic: (video, audio) = ("", "\(source.kind)\(suffix)")
            }
            return (video.isEmpty ? "" : unique(video), audio.isEmpty ? "" : unique(audio))
        }
    }
}

/// Encoder flags shared by publish and screen-share.
struct EncoderFlags {
    /// The options that set the video encoder, and the audio encoder.
    static let videoOptions: Set<String> = [
        "video-codec", "width", "height", "fps", "bitrate", "keyframe-interval", "ladder",
    ]
    static let audioOptions: Set<String> = ["audio-codec", "audio-bitrate", "channels"]
    static let options = videoOptions.union(audioOptions)
    /// The flags' help, stating the defaults of the command that shows it.
    static func help(_ d: VideoEncoderConfig) -> String {
        let size = d.width == 0 && d.height == 0 ? "0x0: the source's own" : "\(d.width)x\(d.height)"
        let (seconds, attoseconds) = d.keyframeInterval.components
        let keyframe = attoseconds == 0 ? "\(seconds)" : "\(Double(seconds) + Double(attoseconds) / 1e18)"
        return """
              --video-codec C           h264 (default), h265, vp8, vp9, av1
              --width W --height H      output size (default \(size); 0x0 keeps the source's)
              --fps N                   frame rate cap (default \(d.maxFrameRate))
              --bitrate BPS             video bitrate in bit/s (default \(d.bitrate))
              --keyframe-interval S     seconds between keyframes = groups (default \(keyframe))
              --ladder RUNGS            publish each video source at several sizes and bitrates, as
                                        renditions players choose among (adaptive bitrate): 720p (3.5 /
                                        1.2 / 0.4 Mbit/s at 720p, 360p, 180p), or NAME:WxH@BPS,… e.g.
                                        hd:1280x720@3500000,sd:640x360@1200000; tracks are <track>/NAME
              --audio-codec C           opus (default) or aac
              --audio-bitrate BPS       audio bitrate in bit/s (default 96000)
              --channels N              audio channels (default 2)
            """
    }

    var video: VideoEncoderConfig
    var audio: AudioEncoderConfig

    /// `--ladder`: `720p`, or rungs `NAME:WxH@BPS` separated by commas.
    static func ladder(_ text: String) throws(CommandError) -> [VideoEncoderConfig.LadderRung] {
        if text == "720p" { return VideoEncoderConfig.LadderRung.camera720p }
        var rungs: [VideoEncoderConfig.LadderRung] = []
        for part in text.split(separator: ",") {
            guard let rung = VideoEncoderConfig.LadderRung(parsing: String(part)) else {
                throw .usage("--ladder: '\(part)' is not NAME:WxH@BPS (e.g. 720p:1280x720@3500000)")
            }
            rungs.append(rung)
        }
        guard rungs.count >= 2 else { throw .usage("--ladder needs two rungs at least (or 720p)") }
        guard Set(rungs.map(\.name)).count == rungs.count else { throw .usage("--ladder: rung names must differ") }
        return rungs
    }

    init(_ args: Arguments, defaults: VideoEncoderConfig) throws(CommandError) {
        video = defaults
        audio = AudioEncoderConfig(channels: 2, bitrate: 96_000)
        do {
            if let c = args.value("video-codec") {
                guard let codec = VideoEncoderConfig.Codec(rawValue: c) else {
                    throw CommandError.usage("unknown --video-codec \(c)")
                }
                video.codec = codec
            }
            video.width = try args.integer("width", default: video.width)
            video.height = try args.integer("height", default: video.height)
            video.maxFrameRate = try args.integer("fps", default: video.maxFrameRate)
            video.bitrate = try args.integer("bitrate", default: video.bitrate)
            video.keyframeInterval = try args.seconds("keyframe-interval", default: video.keyframeInterval)
            if let text = args.value("ladder") {
                video.ladder = try Self.ladder(text)
            }
            if let c = args.value("audio-codec") {
                guard let codec = AudioEncoderConfig.Codec(rawValue: c) else {
                    throw CommandError.usage("unknown --audio-codec \(c)")
                }
                audio.codec = codec
            }
            audio.bitrate = try args.integer("audio-bitrate", default: audio.bitrate)
            audio.channels = try args.integer("channels", default: audio.channels)
        } catch let error as CommandError {
            throw error
        } catch {
            throw .usage("\(error)")
        }
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqCatalog
import MoqCommandLine
import MoqKit

/// `swiftmoq publish`: captures, encodes and publishes a broadcast (MoqKit's Publisher on moqsink).
enum PublishCommand {
    static let usage = """
        usage: swiftmoq publish --url URL --broadcast B --source SOURCE [--source SOURCE…] [options]

        Publishes a broadcast from capture sources: a live status line (state, bitrate, RTT,
        frames) on a terminal; quiet when standard error is piped. Stops on Ctrl-C, or after
        --duration, delivering what was captured first.

        sources:
          test                      a test pattern and a 440 Hz tone
          camera[:DEVICE]           a V4L2 camera (default /dev/video0)
          screen[:DISPLAY]          an X11 display (default :0), tuned for text: see screen-share
          mic[:pulse|alsa]          a microphone (default: autoaudiosrc)
          file:PATH                 a media file, paced to real time (--no-audio / --no-video to skip one);
                                    its streams are published as they are when the catalog can carry
                                    them (H.264/H.265/AV1/VP8/VP9, Opus/AAC/MP3/FLAC), else re-encoded;
                                    --transcode (or any video/audio encoder option) re-encodes all
        Each source is a track (test and file: two). A kind given more than once gets each source's
        device, display or file after its name: --source camera:/dev/video0 --source camera:/dev/video2
        publishes camera-video0 and camera-video2.

        \(ClientFlags.help)
          --broadcast B             broadcast path
          --duration S              stop after S seconds
          --data NAME               also publish standard input, one line per frame, as data track NAME
          --no-audio, --no-video    skip that part of a file or test source
          --transcode               re-encode a file's streams even when they could pass through
        \(EncoderFlags.help(defaults))

        examples:
          swiftmoq publish --url moql://localhost:4443/anon --tls-fingerprint $FP --broadcast room/cam \\
              --source camera --source mic
          swiftmoq publish --url moql://relay.example/anon --broadcast demo --source test --duration 30
        """

    static let options: Set<String> = ClientFlags.options.union(EncoderFlags.options).union([
        "broadcast", "source", "duration", "data",
    ])
    static let flags: Set<String> = ClientFlags.flags.union(["no-audio", "no-video", "transcode"])

    /// The video encoder's defaults (the help states them).
    static let defaults = VideoEncoderConfig(width: 1280, height: 720, bitrate: 2_000_000)

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do { args = try Arguments(argv, options: options, flags: flags) } catch { throw .usage(error.description) }
        let sources = try args.all("source").map { text throws(CommandError) in try SourceSpec(text) }
        guard !sources.isEmpty else { throw .usage("--source is required") }
        let encoders = try EncoderFlags(args, defaults: defaults)
        try await publish(args, sources: sources, encoders: encoders)
    }

    static func publish(_ args: Arguments, sources: [SourceSpec], encoders: EncoderFlags) async throws(CommandError) {
        let broadcast: String
        let duration: Duration?
        do {
            broadcast = try args.required("broadcast")
            duration = args.value("duration") == nil ? nil : try args.seconds("duration", default: .zero)
        } catch { throw .usage(error.description) }
        let flags = try SessionFlags(args)
        let publisher = Publisher()
        let video = !args.has("no-video")
        let audio = !args.has("no-audio")
        do {
            // Several sources of one kind (two cameras) get a track each, named after what tells them apart.
            for (source, names) in zip(sources, SourceSpec.trackNames(sources)) {
                switch source {
                case .test:
                    if video {
                        try publisher.addVideoTrack(name: names.video, source: TestPattern(), config: encoders.video)
                    }
                    if audio {
                        try publisher.addAudioTrack(name: names.audio, source: TestPattern(), config: encoders.audio)
                    }
                case .camera(let device):
                    try publisher.addVideoTrack(
                        name: names.video, source: CameraCapture(device: device), config: encoders.video)
                case .screen(let display):
                    var config = encoders.video
                    config.contentHint = .detail
                    try publisher.addVideoTrack(
                        name: names.video, source: ScreenCapture(display: display, frameRate: config.maxFrameRate),
                        config: config)
                case .mic(let system):
                    try publisher.addAudioTrack(
                        name: names.audio, source: MicrophoneCapture(system: system), config: encoders.audio)
                case .file(let path):
                    guard FileManager.default.fileExists(atPath: path) else {
                        throw CommandError.runtime("no such file: \(path)")
                    }
                    try addFile(
                        path, names: names, video: video, audio: audio, encoders: encoders, args: args,
                        publisher: publisher)
                }
            }
        } catch let error as CommandError {
            throw error
        } catch {
            throw .runtime("\(error)")
        }
        let emitter = args.value("data").map { _ in DataTrackEmitter() }
        if let emitter, let name = args.value("data") {
            do { try publisher.addDataTrack(name: name, source: emitter) } catch { throw .runtime(error.description) }
        }
        let session = try await flags.connect()
        do {
            try await session.publish(path: broadcast, publisher: publisher)
            try await publisher.start()
        } catch { throw .runtime(error.description) }
        Output.info("publishing \(broadcast): \(publisher.pipelineDescription ?? "")")
        if let emitter {
            Thread.detachNewThread {
                while let line = readLine(strippingNewline: true) { emitter.send(Data(line.utf8)) }
            }
        }
        let failure = FailureBox()
        let done = StopSignal()
        let watcher = Task {
            for await state in publisher.state {
                switch state {
                case .error(let text):
                    failure.set(text)
                    done.fire()
                case .stopped:
                    // Every source ended (a file played to its end): so does the command.
                    done.fire()
                default: break
                }
            }
        }
        let watch = SignalWatch([SIGINT, SIGTERM])
        let signals = Task {
            _ = await watch.next()
            done.fire()
        }
        let status = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let s = publisher.statistics() else { continue }
                let frames = s.tracks.map { "\($0.name) \($0.frames)" }.joined(separator: ", ")
                StatusLine.update(
                    "● \(broadcast)  \(s.status)  \(StatusLine.rate(Double(s.estimatedSendRateBps))) est.  "
                        + "rtt \(StatusLine.ms(s.roundTripTime))  \(frames)")
            }
        }
        let deadline = duration.map { ContinuousClock.now + $0 }
        while !done.fired {
            if let deadline, ContinuousClock.now >= deadline { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        signals.cancel()
        watcher.cancel()
        status.cancel()
        StatusLine.finish()
        publisher.stop()
        for await _ in publisher.state {}
        await session.close()
        if let text = failure.value { throw .runtime(text) }
    }
}

extension PublishCommand {
    /// A file's tracks: each stream the catalog can carry is published as it is (its codec, size and
    /// bitrate), unless asked to re-encode (`--transcode`, or any encoder option for that kind); the
    /// rest is decoded and re-encoded, and the command says which.
    static func addFile(
        _ path: String, names: (video: String, audio: String), video: Bool, audio: Bool, encoders: EncoderFlags,
        args: Arguments, publisher: Publisher
    ) throws {
        let probed = (try? MediaFileProbe.streams(inFile: path)) ?? []
        /// The stream of `kind` to publish as it is, unless the catalog cannot carry it or re-encoding was asked for.
        func passable(_ kind: MediaKind, encoderOptions: Set<String>) -> ProbedStream? {
            guard !args.has("transcode"), !encoderOptions.contains(where: { args.value($0) != nil }) else { return nil }
            return probed.first { $0.kind == kind && $0.rendition != nil }
        }
        let reasons = { (kind: MediaKind) in probed.first { $0.kind == kind }?.reason.map { " (\($0))" } ?? "" }
        var passed: [String] = []
        var encoded: [String] = []
        var missing: [String] = []
        // A kind the file does not have is skipped (its branch would fail the pipeline).
        let hasVideo = probed.isEmpty || probed.contains { $0.kind == .video }
        let hasAudio = probed.isEmpty || probed.contains { $0.kind == .audio }
        if video && !hasVideo { missing.append("no video") }
        if audio && !hasAudio { missing.append("no audio") }
        if video && hasVideo {
            if let stream = passable(.video, encoderOptions: EncoderFlags.videoOptions) {
                let track = EncodedFileStream(path: path, probed: stream)
                try publisher.addEncodedTrack(name: names.video, stream: track)
                passed.append("video (\(track.codec))")
            } else {
                // A file keeps its own picture size unless one is asked for.
                var config = encoders.video
                if args.value("width") == nil && args.value("height") == nil {
                    config.width = 0
                    config.height = 0
                }
                try publisher.addVideoTrack(name: names.video, source: FileSource(path: path), config: config)
                encoded.append("video as \(config.codec.rawValue) at \(config.bitrate) bit/s\(reasons(.video))")
            }
        }
        if audio && hasAudio {
            if let stream = passable(.audio, encoderOptions: EncoderFlags.audioOptions) {
                let track = EncodedFileStream(path: path, probed: stream)
                try publisher.addEncodedTrack(name: names.audio, stream: track)
                passed.append("audio (\(track.codec))")
            } else {
                try publisher.addAudioTrack(name: names.audio, source: FileSource(path: path), config: encoders.audio)
                encoded.append(
                    "audio as \(encoders.audio.codec.rawValue) at \(encoders.audio.bitrate) bit/s\(reasons(.audio))")
            }
        }
        var parts: [String] = missing.isEmpty ? [] : ["has \(missing.joined(separator: " and "))"]
        if !passed.isEmpty { parts.append("passes \(passed.joined(separator: " and ")) through as it is") }
        if !encoded.isEmpty { parts.append("decodes and re-encodes \(encoded.joined(separator: ", "))") }
        if !parts.isEmpty {
            Output.notice("\(path): \(parts.joined(separator: "; ")); publishing ends with the file")
        }
    }
}

/// The first failure a task saw.
final class FailureBox: @unchecked Sendable {
    private let lock = NSLock()
    private var text: String?
    func set(_ t: String) { lock.withLock { if text == nil { text = t } } }
    var value: String? { lock.withLock { text } }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import GstSwiftMoQ
public import MoqCatalog
import MoqMPRIS
package import MoqPipeline
import MoqSync
import SwiftMoQ

/// Plays a broadcast's video and audio (moq-kit's `Player`), through a GStreamer pipeline that
/// starts with `moqsrc`: one live timeline joined at the live edge, reconnects, moq-kit's events and
/// stats. Latency is moqsrc's own default (an adaptive margin, and catch-up after a stall) unless a
/// `targetBuffering` is given: then it is moqsrc's fixed `latency`, as moq-kit means it.
///
/// Differences from moq-kit: it renders where ``PlayerOutput`` says (a window, a file, app
/// callbacks, or nowhere) instead of an `AVSampleBufferDisplayLayer`; it plays on its Session's
/// connection (no connection of its own); ``pause()`` stops the pipeline and ``play()`` resumes at
/// the live edge, as moq-kit's — except in ``PlaybackMode/longForm(bufferDuration:)``, where
/// pause and resume keep the pipeline, the connection and the buffer.
public final class Player: Sendable {
    /// The catalog it plays from.
    public let catalog: Catalog
    /// The video track played, if any.
    public let videoTrackName: String?
    /// The audio track played, if any.
    public let audioTrackName: String?
    /// How it buffers.
    public let mode: PlaybackMode

    private let output: PlayerOutput
    private let events = Broadcaster<PlayerEvent>()
    private let statsStream = Broadcaster<PlaybackStats>()
    private let diagnosticEvents = Broadcaster<PipelineEvent>(buffer: 256)
    private struct State {
        /// moq-kit's target buffering (moqsrc's fixed `latency`); nil: moqsrc's default.
        var latency: Duration?
        /// 0 (silent) to 1 (as published), or more (amplified, up to 10).
        var volume = 1.0
        var pipeline: Pipeline?
        var watcher: Task<Void, Never>?
        var taps: [FrameTap] = []
        var stats = PlaybackStats()
        var everPlayed = false
        var stopped = false
        /// Long-form: paused with the pipeline kept.
        var paused = false
        /// Set by ``switchAudioOutput(to:)``: where audio goes instead of what ``PlayerOutput`` says.
        var audioOutput: AudioOutput?
        /// The tap of a callback audio output, among ``taps``.
        var audioTap: FrameTap?
        /// Names each switched-to output's appsink.
        var outputGeneration = 0
        var nowPlaying: NowPlaying?
        var mpris: MPRISService?
        /// Broadcasts to play after the catalog's, in order (moqsrc's `queue`; ``QueuePlayer``).
        var queue: [String] = []
        /// Someone asked for ``Player/diagnostics()``: moqsrc posts its per-frame drops.
        var diagnostics = false
    }
    private let state: Lock<State>

    /// Live playback takes back the delay a stall added (moqsrc's `catch-up`); off for a recording.
    public let catchUp: Bool
    /// Adaptive bitrate chooses the video rendition (no `videoTrackName` was given, `abr` was not
    /// turned off, and the catalog's video renditions are a ladder: moqsrc decides the last).
    /// ``videoTrackName`` is then where it starts; ``PlaybackStats/videoTrack`` is where it is.
    public let adaptive: Bool
    /// What adaptive bitrate may choose from (renditions larger or dearer are left out).
    public let maxResolution: (width: Int, height: Int)?
    public let maxBitrate: Int?

    /// A player for `catalog`'s tracks: the named ones, else the first playable video and audio.
    /// - Parameters:
    ///   - targetBuffering: moq-kit's target: frames of the live edge are rendered that long after
    ///     they arrive (moqsrc's fixed `latency`). nil (the default): moqsrc's own default, which
    ///     renders them as soon as the path allows and adds a margin only when frames arrive late.
    ///   - catchUp: after a stall, live playback returns to its target by dropping whole frames at
    ///     quiet moments; false keeps everything (``PlayerOutput/file(path:)`` records never catch up).
    /// - Throws: ``SessionError/noTracksAvailable`` when nothing is playable;
    ///   ``SessionError/invalidConfiguration(_:)`` for a name that is not a playable track.
    ///   - abr: when no `videoTrackName` is given and the catalog's video renditions are a ladder
    ///     (one picture at several bitrates), play the highest the path carries and switch as it
    ///     changes (`track.switch` events; moq-kit switches only when asked). `maxResolution` and
    ///     `maxBitrate` (bit/s) cap what it chooses, e.g. for a small view or a metered link.
    public init(
        catalog: Catalog, videoTrackName: String? = nil, audioTrackName: String? = nil,
        targetBuffering: Duration? = nil, output: PlayerOutput = .window, mode: PlaybackMode = .live,
        catchUp: Bool = true, abr: Bool = true, maxResolution: (width: Int, height: Int)? = nil, maxBitrate: Int? = nil
    ) throws(SessionError) {
        func pick<T>(_ name: String?, _ tracks: [T], _ trackName: (T) -> String, _ playable: (T) -> Bool)
            throws(SessionError) -> String?
        {
            guard let name else { return tracks.first(where: playable).map(trackName) }
            guard let track = tracks.first(where: { trackName($0) == name }) else {
                throw .invalidConfiguration("no track named \"\(name)\" in the catalog")
            }
            guard playable(track) else { throw .unsupportedCodec("track \"\(name)\" is not playable here") }
            return name
        }
        self.catalog = catalog
        // A file records what it was asked to: one rendition throughout.
        var recording = false
        if case .file = output { recording = true }
        adaptive = abr && videoTrackName == nil && !recording && catalog.videoTracks.filter(\.isPlayable).count >= 2
        self.maxResolution = maxResolution
        self.maxBitrate = maxBitrate
        self.videoTrackName = try pick(videoTrackName, catalog.videoTracks, \.name, \.isPlayable)
        self.audioTrackName = try pick(audioTrackName, catalog.audioTracks, \.name, \.isPlayable)
        guard self.videoTrackName != nil || self.audioTrackName != nil else { throw .noTracksAvailable }
        self.output = output
        self.mode = mode
        if case .file = output { self.catchUp = false } else { self.catchUp = catchUp }
        state = Lock(State(latency: targetBuffering))
        var fields: [String: PipelineValue] = ["catalog-path": .string(catalog.path)]
        if let targetBuffering { fields["target-buffering-ms"] = .int(Int64(Self.ms(targetBuffering))) }
        events.yield(PlayerEvent(.playerInit, fields: fields))
    }

    /// Player events from now on (each call is an independent stream).
    public func subscribeEvents() -> AsyncStream<PlayerEvent> { events.stream() }

    /// Statistics about once a second (each call is an independent stream).
    public func subscribeStats() -> AsyncStream<PlaybackStats> { statsStream.stream() }

    /// Typed per-frame diagnostics from now on (moq-kit's diagnostics channel): every drop with its
    /// stage and reason, stalls, and once a second a latency and a bandwidth sample. Each call is an
    /// independent stream that keeps the newest 256 events when its reader falls behind: it never
    /// slows playback. The first call turns on moqsrc's `diagnostics` (per-drop messages); for
    /// logging and telemetry, not for control.
    public func diagnostics() -> AsyncStream<PipelineEvent> {
        let stream = diagnosticEvents.stream()
        let pipeline = state.withLock { s -> Pipeline? in
            defer { s.diagnostics = true }
            return s.diagnostics ? nil : s.pipeline
        }
        try? pipeline?.element(named: "src").set("diagnostics", true)
        return stream
    }

    /// The running pipeline (for tools in this package, e.g. latency probes); the video sink is `vout`.
    package var runningPipeline: Pipeline? { state.withLock { $0.pipeline } }

    /// The latest statistics.
    public var stats: PlaybackStats { state.withLock { $0.stats } }

    /// The gst-launch description of the pipeline ``play()`` runs.
    public var pipelineDescription: String { makePipeline(latency: state.withLock { $0.latency }).description }

    /// Starts (or, after ``pause()``, resumes: at the live edge, or in long-form where it paused).
    public func play() async throws(SessionError) {
        if let paused = state.withLock({ s -> Pipeline? in
            guard s.paused, let pipeline = s.pipeline else { return nil }
            s.paused = false
            return pipeline
        }) {
            do { _ = try paused.setState(.playing) } catch { throw .invalidConfiguration(error.description) }
            events.yield(PlayerEvent(.playbackResume))
            mpris?.update(status: .playing)
            return
        }
        guard
            let (latency, resume) = try state.withLock({ s throws(SessionError) -> (Duration?, Bool)? in
                guard !s.stopped else { throw .invalidState("the player was stopped") }
                guard s.pipeline == nil else { return nil }
                return (s.latency, s.everPlayed)
            })
        else { return }
        events.yield(PlayerEvent(resume ? .playbackResume : .playbackRequest))
        SwiftMoQElements.register()
        let pipeline = makePipeline(latency: latency)
        // moqsrc plays on the Session's connection instead of opening one of its own.
        if let connection = catalog.broadcast.connection {
            pipeline.provide(SharedConnection.context(for: connection))
        }
        let messages = pipeline.messages
        do { try pipeline.start() } catch { throw .invalidConfiguration(error.description) }
        let (taps, audioTap) = attachTaps(pipeline)
        let watcher = Task { [weak self] in
            for await message in messages {
                guard let self else { return }
                self.handle(message)
            }
        }
        state.withLock { s in
            s.pipeline = pipeline
            s.watcher = watcher
            s.taps = taps
            s.audioTap = audioTap
            s.everPlayed = true
        }
        for (kind, name) in [("video", videoTrackName), ("audio", audioTrackName)] {
            if let name { events.yield(PlayerEvent(.trackSubscribeStart, kind: kind, trackName: name)) }
        }
        mpris?.update(status: .playing)
        // A new pipeline (live playback resumed) plays where the audio was switched to.
        if let switched = state.withLock({ $0.audioOutput }) { try? switchAudioOutput(to: switched) }
    }

    /// Moves the audio to another output while playing (another device, another sink, the app):
    /// no reconnect, no flush, the buffer in flight finishes where it was and the next one is
    /// rendered by the new output. Kept across ``pause()`` and ``play()``.
    /// - Throws: ``SessionError/invalidState(_:)`` when not playing audio (or recording to a file);
    ///   ``SessionError/invalidConfiguration(_:)`` when the output cannot be made (a missing element).
    public func switchAudioOutput(to output: AudioOutput) throws(SessionError) {
        guard audioTrackName != nil else { throw .invalidState("no audio track is played") }
        if case .file = self.output { throw .invalidState("a recording to a file has no audio output") }
        let (pipeline, generation) = state.withLock { s -> (Pipeline?, Int) in
            s.outputGeneration += 1
            return (s.pipeline, s.outputGeneration)
        }
        guard let pipeline, let volume = try? pipeline.element(named: "volume") else {
            throw .invalidState("not playing: call play() first")
        }
        let tapName = "aout-\(generation)"
        let previous = state.withLock { $0.audioTap }
        do {
            // The old output's reader takes what its appsink still holds before it is shut down.
            try volume.replaceDownstream(with: output.description(tap: tapName)) { previous?.drain(timeoutMs: 500) }
        } catch {
            throw .invalidConfiguration("the audio output cannot be made: \(error)")
        }
        var tap: FrameTap?
        if case .callback(let deliver) = output, let sink = try? pipeline.element(named: tapName) {
            tap = Self.audioTap(sink, deliver)
        }
        let old = state.withLock { s -> FrameTap? in
            let old = s.audioTap
            if let old { s.taps.removeAll { $0 === old } }
            if let tap { s.taps.append(tap) }
            s.audioTap = tap
            s.audioOutput = output
            return old
        }
        old?.stop()
        events.yield(PlayerEvent(.audioOutputChange, kind: "audio", trackName: audioTrackName))
    }

    /// Stops playing: live, the subscriptions end and ``play()`` resumes at the live edge;
    /// long-form, the pipeline pauses (the connection, subscriptions and buffer stay) and
    /// ``play()`` resumes where it paused.
    public func pause() async {
        if case .longForm = mode {
            guard
                let pipeline = state.withLock({ s -> Pipeline? in
                    guard !s.paused, let pipeline = s.pipeline else { return nil }
                    s.paused = true
                    return pipeline
                })
            else { return }
            _ = try? pipeline.setState(.paused)
            events.yield(PlayerEvent(.playbackPause))
            mpris?.update(status: .paused)
            return
        }
        guard release() else { return }
        events.yield(PlayerEvent(.playbackPause))
        mpris?.update(status: .paused)
    }

    /// The audio volume: 0 is silent, 1 as published (up to 10). Applied at once, to the samples
    /// that have not reached the output yet; kept across pause and play.
    public func setVolume(_ volume: Double) {
        let level = min(10, max(0, volume.isFinite ? volume : 1))
        let pipeline = state.withLock { s -> Pipeline? in
            s.volume = level
            return s.pipeline
        }
        try? pipeline?.element(named: "volume").set("volume", level)
    }

    /// Replaces what plays after the current broadcast (moqsrc's `queue`): broadcast paths relative
    /// to the Session's root, each subscribed and prerolled before its predecessor ends.
    func setQueue(_ items: [String]) {
        let pipeline = state.withLock { s -> Pipeline? in
            s.queue = items
            return s.pipeline
        }
        try? pipeline?.element(named: "src").set("queue", items.joined(separator: ","))
    }

    /// Long-form: plays from `behindLiveEdge` before the newest media received, at once (the
    /// buffer is kept; the first samples are heard about 30 ms later). The position is moved back
    /// to a keyframe and kept within what is buffered. Live playback has no buffer to seek in.
    public func seek(behindLiveEdge: Duration) throws(SessionError) {
        try seek(.beforeEnd(behindLiveEdge))
    }

    /// Long-form: plays from a point of the publisher's timeline (the ``AudioSamples/publisherTime``
    /// of what is heard), within what is buffered.
    public func seek(toPublisherTime time: Duration) throws(SessionError) {
        try seek(.at(time))
    }

    private func seek(_ position: SeekPosition) throws(SessionError) {
        guard case .longForm = mode else {
            throw .invalidState("seeking needs PlaybackMode.longForm: live playback keeps no buffer to seek in")
        }
        guard let pipeline = state.withLock({ $0.pipeline }), let src = try? pipeline.element(named: "src") else {
            throw .invalidState("not playing: call play() first")
        }
        guard src.seek(position) else { throw .invalidState("nothing buffered to seek in yet") }
        events.yield(PlayerEvent(.playbackSeek))
    }

    /// Publishes this player on D-Bus as `org.mpris.MediaPlayer2.<name>` (MPRIS 2): media keys,
    /// `playerctl` and desktop applets can Play, Pause, PlayPause and Stop it and read `Metadata`
    /// (from ``nowPlaying``) and `PlaybackStatus`. Ends with ``stop()``.
    /// - Parameter busAddress: a bus other than the session bus (a private `dbus-daemon`).
    /// - Throws: ``SessionError/invalidConfiguration(_:)`` when the bus cannot be reached or the name is taken.
    public func publishMPRIS(name: String = "swiftmoq", busAddress: String? = nil) throws(SessionError) {
        let weakSelf = WeakPlayer(self)
        let handlers = MPRISService.Handlers(
            play: { Task { try? await weakSelf.value?.play() } },
            pause: { Task { await weakSelf.value?.pause() } },
            stop: { Task { await weakSelf.value?.stop() } })
        let service: MPRISService
        do { service = try MPRISService(name: name, busAddress: busAddress, handlers: handlers) } catch {
            throw .invalidConfiguration("MPRIS: \(error.description)")
        }
        let (playing, now) = state.withLock { s -> (Bool, NowPlaying?) in
            s.mpris?.close()
            s.mpris = service
            return (s.pipeline != nil && !s.paused, s.nowPlaying)
        }
        service.update(status: playing ? .playing : .paused)
        if let now { service.update(metadata: Self.metadata(now)) }
    }

    static func metadata(_ now: NowPlaying) -> MPRISService.Metadata {
        MPRISService.Metadata(
            title: now.title, artist: now.artist, album: now.album,
            lengthUs: now.durationMs.map { Int64(clamping: $0) &* 1000 })
    }

    private var mpris: MPRISService? { state.withLock { $0.mpris } }

    /// What is playing (title, artist, album, duration, artwork), from the broadcast's now-playing
    /// track, when its publisher has one; ``PlayerEvent/Name/nowPlaying`` says when it changes.
    public var nowPlaying: NowPlaying? { state.withLock { $0.nowPlaying } }

    /// The audio volume (``setVolume(_:)``).
    public var volume: Double { state.withLock { $0.volume } }

    /// Changes the target buffering while playing (moqsrc's `latency`: the fixed budget when one
    /// was given at the start, else the ceiling of moqsrc's adaptive margin).
    public func updateTargetLatency(_ latency: Duration) {
        let pipeline = state.withLock { s -> Pipeline? in
            s.latency = latency
            return s.pipeline
        }
        try? pipeline?.element(named: "src").set("latency", Self.ms(latency))
    }

    /// Ends playback for good.
    public func stop() async {
        _ = release()
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        state.withLock { s in
            s.mpris?.update(status: .stopped)
            s.mpris?.close()
            s.mpris = nil
        }
        events.yield(PlayerEvent(.playbackEnd, fields: ["reason": .string("stopped")]))
        events.yield(PlayerEvent(.playerDestroy))
        events.finish()
        statsStream.finish()
        diagnosticEvents.finish()
    }

    private func release() -> Bool {
        let (pipeline, watcher, taps) = state.withLock { s -> (Pipeline?, Task<Void, Never>?, [FrameTap]) in
            defer {
                s.pipeline = nil
                s.watcher = nil
                s.taps = []
            }
            return (s.pipeline, s.watcher, s.taps)
        }
        state.withLock { $0.paused = false }
        guard let pipeline else { return false }
        for tap in taps { tap.stop() }
        watcher?.cancel()
        pipeline.stop()
        return true
    }

    private func handle(_ message: BusMessage) {
        switch message {
        case .element(let source, let name, let fields, _) where source == "src":
            for event in PipelineEvent.from(message: name, fields: fields) { diagnosticEvents.yield(event) }
            if name == "stats" {
                let stats = PlaybackStats(fields)
                state.withLock { $0.stats = stats }
                statsStream.yield(stats)
            } else if let event = PlayerEvent(message: name, fields: fields) {
                if name == "now-playing", let json = fields["json"]?.stringValue,
                    let now = try? NowPlaying(json: Array(json.utf8))
                {
                    state.withLock { $0.nowPlaying = now }
                    mpris?.update(metadata: Self.metadata(now))
                }
                events.yield(event)
            }
        case .error(_, _, _, let text, _):
            KitLogger.log(.error, "player", "\(catalog.broadcast.absolutePath): \(text)")
            events.yield(PlayerEvent(.trackSubscribeError, fields: ["message": .string(text)]))
            events.yield(PlayerEvent(.playbackEnd, fields: ["reason": .string(text)]))
        case .eos:
            events.yield(PlayerEvent(.playbackEnd, fields: ["reason": .string("the broadcast ended")]))
        default:
            break
        }
    }

    // MARK: Pipeline

    static func ms(_ d: Duration) -> Int {
        Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
    }

    private func makePipeline(latency: Duration?) -> Pipeline {
        let broadcast = catalog.broadcast
        var src = Element("moqsrc", name: "src").set("url", broadcast.url).set("broadcast", broadcast.absolutePath)
            .set("audio-track", audioTrackName ?? "none")
        if adaptive {
            // moqsrc chooses the rung (and plays the first rendition when the section is not a ladder).
            if let maxResolution { src = src.set("max-resolution", "\(maxResolution.width)x\(maxResolution.height)") }
            if let maxBitrate { src = src.set("max-bitrate", maxBitrate) }
        } else {
            src = src.set("video-track", videoTrackName ?? "none").set("abr", false)
        }
        // moq-kit's targetBuffering is a fixed target; without one, moqsrc's default plays.
        if let latency { src = src.set("latency-mode", "fixed").set("latency", Self.ms(latency)) }
        if !catchUp { src = src.set("catch-up", false) }
        if state.withLock({ $0.diagnostics }) { src = src.set("diagnostics", true) }
        for (key, value) in broadcast.options.elementProperties + mode.elementProperties { src = src.set(key, value) }
        let queue = state.withLock { $0.queue }
        if !queue.isEmpty { src = src.set("queue", queue.joined(separator: ",")) }
        var nodes = src.nodes
        if case .file(let path) = output {
            for (pad, parser) in [("video_0", parser(video: true)), ("audio_0", parser(video: false))] {
                guard let parser else { continue }
                nodes +=
                    Branch {
                        From("src", pad: pad)
                        Queue()
                        if !parser.isEmpty { Element(parser) }
                        Link(to: "mux")
                    }.nodes
            }
            nodes +=
                Branch {
                    Element("matroskamux", name: "mux"); Element("filesink").set("location", path)
                }.nodes
            return Pipeline(nodes: nodes)
        }
        if videoTrackName != nil {
            nodes +=
                Branch {
                    From("src", pad: "video_0")
                    Queue()
                    Element("decodebin")
                    Element("videoconvert")
                    videoSink
                }.nodes
        }
        if audioTrackName != nil {
            nodes +=
                Branch {
                    From("src", pad: "audio_0")
                    Queue()
                    Element("decodebin")
                    Element("audioconvert")
                    Element("audioresample")
                    // Right before the output: a change reaches what is heard within one buffer.
                    Element("volume", name: "volume").set("volume", state.withLock { $0.volume })
                    audioSink
                }.nodes
        }
        return Pipeline(nodes: nodes)
    }

    @PipelineBuilder private var videoSink: [PipelineNode] {
        switch output {
        case .window: Element("autovideosink", name: "vout")
        case .headless, .file: Element("fakesink", name: "vout").set("sync", true)
        case .callbacks:
            Caps("video/x-raw", ["format": "I420"])
            Element("appsink", name: "vout").set("sync", true).set("max-buffers", 4).set("drop", true)
        }
    }

    @PipelineBuilder private var audioSink: [PipelineNode] {
        switch output {
        case .window: Element("autoaudiosink", name: "aout")
        case .headless, .file: Element("fakesink", name: "aout").set("sync", true)
        case .callbacks:
            Caps("audio/x-raw", ["format": "F32LE", "layout": "interleaved"])
            Element("appsink", name: "aout").set("sync", true).set("max-buffers", 16).set("drop", true)
        }
    }

    /// The parser before the muxer for the played track's codec ("" when none is needed; nil: no track).
    private func parser(video: Bool) -> String? {
        let codec: String
        if video {
            guard let name = videoTrackName, let t = catalog.videoTracks.first(where: { $0.name == name }) else {
                return nil
            }
            codec = t.config.codec
        } else {
            guard let name = audioTrackName, let t = catalog.audioTracks.first(where: { $0.name == name }) else {
                return nil
            }
            codec = t.config.codec
        }
        switch codec.prefix(4) {
        case "avc1", "avc3": return "h264parse"
        case "hvc1", "hev1": return "h265parse"
        case "av01": return "av1parse"
        case "opus": return "opusparse"
        case "mp4a": return "aacparse"
        case "mp3": return "mpegaudioparse"
        default: return ""
        }
    }

    private func attachTaps(_ pipeline: Pipeline) -> (all: [FrameTap], audio: FrameTap?) {
        guard case .callbacks(let onVideo, let onAudio) = output else { return ([], nil) }
        var taps: [FrameTap] = []
        var audioTap: FrameTap?
        if let onVideo, let sink = try? pipeline.element(named: "vout") {
            taps.append(
                FrameTap(sink) { sample in
                    let (data, pts) = FrameTap.bytes(sample)
                    onVideo(
                        VideoFrame(
                            width: FrameTap.intField(sample, "width"), height: FrameTap.intField(sample, "height"),
                            pts: pts, data: data, publisherTime: FrameTap.publisherTime(sample)))
                })
        }
        if let onAudio, let sink = try? pipeline.element(named: "aout") {
            let tap = Self.audioTap(sink, onAudio)
            taps.append(tap)
            audioTap = tap
        }
        return (taps, audioTap)
    }

    /// Hands an appsink's PCM to `deliver`.
    private static func audioTap(_ sink: ElementHandle, _ deliver: @escaping @Sendable (AudioSamples) -> Void)
        -> FrameTap
    {
        FrameTap(sink) { sample in
            let (data, pts) = FrameTap.bytes(sample)
            deliver(
                AudioSamples(
                    sampleRate: FrameTap.intField(sample, "rate"), channels: FrameTap.intField(sample, "channels"),
                    pts: pts, data: data, publisherTime: FrameTap.publisherTime(sample)))
        }
    }
}

/// A weak reference for MPRIS's handlers (the service must not keep its player alive).
private final class WeakPlayer: Sendable {
    private let ref: WeakBox
    init(_ player: Player) { ref = WeakBox(player) }
    var value: Player? { ref.value }
    private final class WeakBox: @unchecked Sendable {
        weak var value: Player?
        init(_ value: Player) { self.value = value }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import GstSwiftMoQ
package import MoqPipeline
import MoqSync
import SwiftMoQ

/// Where a ``Publisher`` stands (moq-kit's `PublisherState`).
public enum PublisherState: Sendable, Equatable {
    /// Tracks may be added; not started.
    case idle
    /// Running and connected to the relay.
    case publishing
    /// Stopped (single use: a new publisher is needed to publish again).
    case stopped
    /// Failed with this message; ``stopped`` follows.
    case error(String)
}

/// Per-track news from a ``Publisher`` (moq-kit's `PublisherEvent`).
public enum PublisherEvent: Sendable, Equatable {
    /// The track's first frame was published.
    case trackStarted(String)
    /// The track ended.
    case trackStopped(String)
    /// Something failed (`track` is empty for the whole publisher).
    case error(track: String, message: String)
}

/// Publishes tracks from capture sources as one broadcast, through a GStreamer pipeline that ends
/// in `moqsink` (moq-kit's `Publisher`).
///
/// Single use, as moq-kit's: add tracks, ``Session/publish(path:publisher:)``, ``start()``, ``stop()``.
/// `name` in the `add…Track` calls is a local label, as in moq-kit: media tracks appear in the
/// catalog as `<index>.<codec family>` (`0.avc3`, `1.opus`); data tracks keep their name.
public final class Publisher: Sendable {
    /// State changes, starting with ``PublisherState/idle``.
    public let state: AsyncStream<PublisherState>
    /// Per-track events.
    public let events: AsyncStream<PublisherEvent>

    private struct Setup {
        var tracks: [PublishedTrack] = []
        var branches: [[PipelineNode]] = []
        var dataPads: [(pad: String, track: String, emitter: DataTrackEmitter)] = []
        var target: (url: String, options: SessionOptions, path: String)?
        /// The Session's connection, shared by moqsink.
        var connection: ReconnectingSession?
        var phase: PublisherState = .idle
        var pipeline: Pipeline?
        var watcher: Task<Void, Never>?
        /// A ladder's keyframe grid (moqsink's `keyframe-interval`).
        var keyframeGrid: Duration?
    }

    private let setup = Lock(Setup())
    private let stateContinuation: AsyncStream<PublisherState>.Continuation
    private let eventContinuation: AsyncStream<PublisherEvent>.Continuation

    /// An idle publisher.
    public init() {
        (state, stateContinuation) = AsyncStream<PublisherState>.makeStream()
        (events, eventContinuation) = AsyncStream<PublisherEvent>.makeStream()
        stateContinuation.yield(.idle)
    }

    /// Adds a video track: `source` → scale/convert/rate → `config`'s encoder → moqsink.
    @discardableResult
    public func addVideoTrack(
        name: String = "video", source: some VideoSource, config: VideoEncoderConfig = VideoEncoderConfig()
    ) throws(SessionError) -> PublishedTrack {
        guard config.isSupported else {
            throw .unsupportedCodec("\(config.codec) needs \(config.codec.encoder), which is not installed")
        }
        if !config.ladder.isEmpty { return try addLadder(name: name, source: source, config: config) }
        return try add(
            name: name,
            info: .video(
                codec: config.codec.rawValue, width: config.width, height: config.height, fps: config.maxFrameRate)
        ) { index in
            var nodes = source.videoElements
            nodes += Element("videoconvert").nodes + Element("videoscale").nodes + Element("videorate").nodes
            nodes += config.encoding
            nodes += Queue().nodes + Link(to: "moq", pad: "sink_\(index)").nodes
            return nodes
        }
    }

    /// A ladder: one source, a tee, an encoder per rung; the tracks are `<name>/<rung>`. Returns
    /// the first (highest) rung's track.
    private func addLadder(name: String, source: some VideoSource, config: VideoEncoderConfig)
        throws(SessionError) -> PublishedTrack
    {
        guard Set(config.ladder.map(\.name)).count == config.ladder.count else {
            throw .invalidConfiguration("the ladder's rung names must differ")
        }
        let tee = "\(name.filter { $0.isLetter || $0.isNumber })_ladder"
        var first: PublishedTrack?
        for (i, rung) in config.ladder.enumerated() {
            let rungConfig = config.rung(rung)
            let track = try add(
                name: "\(name)/\(rung.name)",
                info: .video(
                    codec: config.codec.rawValue, width: rung.width, height: rung.height, fps: config.maxFrameRate)
            ) { index in
                var nodes: [PipelineNode] = []
                if i == 0 {
                    nodes += source.videoElements
                    nodes += Element("videoconvert").nodes + Element("videorate").nodes
                    nodes += Caps("video/x-raw", ["framerate": Fraction(Int32(config.maxFrameRate), 1)]).nodes
                    nodes += Element("tee", name: tee).nodes
                } else {
                    nodes += From(tee).nodes
                }
                nodes += Queue().nodes + Element("videoscale").nodes + rungConfig.encoding
                nodes += Queue().nodes + Link(to: "moq", pad: "sink_\(index)").nodes
                return nodes
            }
            first = first ?? track
        }
        setup.withLock { $0.keyframeGrid = config.keyframeInterval }
        guard let first else { throw .invalidConfiguration("an empty ladder") }
        return first
    }

    /// Adds an audio track: `source` → convert/resample → `config`'s encoder → moqsink.
    @discardableResult
    public func addAudioTrack(
        name: String = "audio", source: some AudioSource, config: AudioEncoderConfig = AudioEncoderConfig()
    ) throws(SessionError) -> PublishedTrack {
        guard config.isSupported else {
            throw .unsupportedCodec("\(config.codec) needs \(config.codec.encoder), which is not installed")
        }
        return try add(name: name, info: .audio(codec: config.codec.rawValue, sampleRate: config.sampleRate)) {
            index in
            source.audioElements + config.encoding + Queue().nodes + Link(to: "moq", pad: "sink_\(index)").nodes
        }
    }

    /// Adds a track that publishes an encoded stream of a file as it is (no decoding, no
    /// re-encoding): its codec, picture size and bitrate are the file's. The stream must be one the
    /// catalog can describe (``ProbedStream/rendition`` non-nil); the publisher stops at the end of
    /// the file, as with ``FileSource``.
    @discardableResult
    public func addEncodedTrack(name: String? = nil, stream: EncodedFileStream) throws(SessionError)
        -> PublishedTrack
    {
        let info: PublishedTrack.CodecInfo =
            stream.kind == .video
            ? .video(codec: stream.codec, width: 0, height: 0, fps: 0) : .audio(codec: stream.codec, sampleRate: 0)
        return try add(name: name ?? (stream.kind == .video ? "video" : "audio"), info: info) { index in
            stream.elements + Queue().nodes + Link(to: "moq", pad: "sink_\(index)").nodes
        }
    }

    /// Adds a data track fed by `source`; its frames keep the track name `name`.
    @discardableResult
    public func addDataTrack(name: String = "data", source: DataTrackEmitter) throws(SessionError) -> PublishedTrack {
        let track = try add(name: name, info: .data) { index in
            DataTrackEmitter.element(named: "data_\(index)").nodes + Link(to: "moq", pad: "sink_\(index)").nodes
        }
        setup.withLock { $0.dataPads.append(("sink_\(track.index)", name, source)) }
        return track
    }

    private func add(
        name: String, info: PublishedTrack.CodecInfo, branch: (Int) -> [PipelineNode]
    ) throws(SessionError) -> PublishedTrack {
        try setup.withLock { s throws(SessionError) -> PublishedTrack in
            guard s.phase == .idle else { throw .invalidState("tracks can only be added before start()") }
            guard !s.tracks.contains(where: { $0.name == name }) else {
                throw .invalidConfiguration("a track named \"\(name)\" was already added")
            }
            let track = PublishedTrack(name: name, codecInfo: info, index: s.tracks.count, publisher: self)
            s.tracks.append(track)
            s.branches.append(branch(track.index))
            return track
        }
    }

    /// Called by ``Session/publish(path:publisher:)``.
    func attach(url: String, options: SessionOptions, path: String, connection: ReconnectingSession?)
        throws(SessionError)
    {
        try setup.withLock { s throws(SessionError) in
            guard s.phase == .idle else { throw .invalidState("the publisher was already started") }
            guard s.target == nil else { throw .invalidState("the publisher is already published") }
            s.target = (url, options, path)
            s.connection = connection
        }
    }

    /// The running pipeline (for tools in this package, e.g. latency probes).
    package var runningPipeline: Pipeline? { setup.withLock { $0.pipeline } }

    /// The gst-launch description the publisher runs (known once published and given tracks).
    public var pipelineDescription: String? { setup.withLock { Self.pipeline(for: $0)?.description } }

    private static func pipeline(for s: Setup) -> Pipeline? {
        guard let target = s.target, !s.branches.isEmpty else { return nil }
        var sink = Element("moqsink", name: "moq").set("url", target.url).set("broadcast", target.path)
        for (key, value) in target.options.elementProperties { sink = sink.set(key, value) }
        // Each track is published under the name it was added with (moq-kit's), not moqsink's
        // default `<index>.<codec>`: a viewer picks it by that name.
        for track in s.tracks { sink = sink.set("sink_\(track.index)::track", track.name) }
        if let grid = s.keyframeGrid {
            let ms = grid.components.seconds * 1000 + grid.components.attoseconds / 1_000_000_000_000_000
            sink = sink.set("keyframe-interval", Int(max(1, ms)))
        }
        var nodes = sink.nodes
        for branch in s.branches { nodes += Branch { branch }.nodes }
        return Pipeline(nodes: nodes)
    }

    /// Starts capturing, encoding and publishing.
    /// - Throws: ``SessionError/invalidState(_:)`` when not published, without tracks, or started
    ///   before; ``SessionError/invalidConfiguration(_:)`` when the pipeline cannot be built (a source
    ///   element missing, bad settings), with GStreamer's message.
    public func start() async throws(SessionError) {
        let (pipeline, connection) = try setup.withLock { s throws(SessionError) -> (Pipeline, ReconnectingSession?) in
            guard s.phase == .idle else { throw .invalidState("a publisher is single-use: it was already started") }
            guard s.target != nil else {
                throw .invalidState("call session.publish(path:publisher:) before start()")
            }
            guard let pipeline = Self.pipeline(for: s) else { throw .invalidState("add a track before start()") }
            s.phase = .publishing
            s.pipeline = pipeline
            return (pipeline, s.connection)
        }
        SwiftMoQElements.register()
        // moqsink publishes on the Session's connection instead of opening one of its own.
        if let connection { pipeline.provide(SharedConnection.context(for: connection)) }
        let messages = pipeline.messages
        do { try pipeline.start() } catch {
            finish(.error(error.description))
            throw .invalidConfiguration(error.description)
        }
        let (tracks, dataPads) = setup.withLock { ($0.tracks, $0.dataPads) }
        for track in tracks { track.set(.starting) }
        for data in dataPads {
            data.emitter.attach(try? pipeline.element(named: "data_\(data.pad.dropFirst(5))"))
        }
        // The bus is watched for as long as the pipeline runs; the tracks' first frames only until
        // each has one. (Both were one task group that ended with whichever finished first: once
        // every track had started, errors and the end of a file went unseen.)
        let watcher = Task { [weak self] in
            let tracksWatch = Task { [weak self] in await self?.watchTracks(pipeline) }
            defer { tracksWatch.cancel() }
            for await message in messages {
                guard let self else { return }
                if case .error(_, _, _, let text, _) = message {
                    self.eventContinuation.yield(.error(track: "", message: text))
                    self.finish(.error(text))
                    return
                }
                if message.isEOS {
                    self.finish(.stopped)
                    return
                }
            }
        }
        setup.withLock { $0.watcher = watcher }
        stateContinuation.yield(.publishing)
    }

    /// Polls moqsink's `stats` for each track's first frame.
    private func watchTracks(_ pipeline: Pipeline) async {
        var started: Set<Int> = []
        while !Task.isCancelled {
            let tracks = setup.withLock { $0.tracks }
            if let stats = try? pipeline.element(named: "moq").property("stats")?.structureValue {
                for case .structure(let track) in stats.fields.map(\.value) {
                    guard let pad = track["pad"]?.stringValue, let index = Int(pad.dropFirst(5)),
                        (track["frames"]?.intValue ?? 0) > 0, !started.contains(index), index < tracks.count
                    else { continue }
                    started.insert(index)
                    tracks[index].set(.active)
                    eventContinuation.yield(.trackStarted(tracks[index].name))
                }
            }
            if started.count == tracks.count { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Moves the broadcast's timeline to the next item (a song, a programme, a skip): every track
    /// starts a group now (video at the keyframe it asks its encoder for), the catalog says where,
    /// and long-form players jump there at once instead of playing out what they buffered of the
    /// previous item. Returns the new item's number.
    /// - Throws: ``SessionError/invalidState(_:)`` when not publishing.
    @discardableResult
    public func startNextItem() throws(SessionError) -> UInt64 {
        guard let pipeline = setup.withLock({ $0.phase == .publishing ? $0.pipeline : nil }),
            let sink = try? pipeline.element(named: "moq")
        else { throw .invalidState("not publishing: call start() first") }
        let current = (try? sink.property("item"))??.intValue ?? 0
        let next = UInt64(max(0, current)) + 1
        do { try sink.set("item", Int(next)) } catch { throw .invalidState(error.description) }
        return next
    }

    /// Stops: every track ends (moqsink delivers what it has, ≤ 5 s), then the pipeline is released.
    public func stop() {
        let pipeline = setup.withLock { s -> Pipeline? in
            if s.phase == .idle { s.phase = .stopped }
            return s.pipeline
        }
        guard let pipeline else {
            finish(.stopped)
            return
        }
        try? pipeline.sendEOS()
        Task { [weak self] in
            _ = try? await pipeline.waitForEOS(timeout: .seconds(6))
            self?.finish(.stopped)
        }
    }

    /// Ends one track (its source sends EOS; moqsink finishes the track).
    func stop(_ track: PublishedTrack) {
        guard let pipeline = setup.withLock({ $0.pipeline }) else {
            track.set(.stopped)
            return
        }
        if case .data = track.codecInfo, let appsrc = try? pipeline.element(named: "data_\(track.index)") {
            gst_app_src_end_of_stream(
                UnsafeMutableRawPointer(appsrc.object.pointer).assumingMemoryBound(to: GstAppSrc.self))
        } else if let sink = try? pipeline.element(named: "moq") {
            // EOS into moqsink's pad for this track: the track finishes, the others go on.
            if let pad = gst_element_get_static_pad(sink.object.pointer, "sink_\(track.index)") {
                gst_pad_send_event(pad, gst_event_new_eos())
                gst_object_unref(pad)
            }
        }
        track.set(.stopped)
        eventContinuation.yield(.trackStopped(track.name))
    }

    private func finish(_ final: PublisherState) {
        let (pipeline, watcher, tracks, dataPads, wasDone) = setup.withLock {
            s -> (
                Pipeline?, Task<Void, Never>?, [PublishedTrack],
                [(pad: String, track: String, emitter: DataTrackEmitter)], Bool
            )
            in
            let done = s.phase == .stopped || { if case .error = s.phase { return true } else { return false } }()
            s.phase = .stopped
            defer {
                s.pipeline = nil
                s.watcher = nil
            }
            return (s.pipeline, s.watcher, s.tracks, s.dataPads, done && s.pipeline == nil)
        }
        guard !wasDone else { return }
        for data in dataPads { data.emitter.attach(nil) }
        watcher?.cancel()
        pipeline?.stop()
        for track in tracks { track.set(.stopped) }
        if case .error = final { stateContinuation.yield(final) }
        stateContinuation.yield(.stopped)
        stateContinuation.finish()
        eventContinuation.finish()
    }
}

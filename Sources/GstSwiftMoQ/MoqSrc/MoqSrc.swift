// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch
import MoqCatalog
import MoqMedia
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// The pipeline clock with the element's base time: running time on demand.
struct PipelineTime {
    let clock: UnsafeMutablePointer<GstClock>
    let base: UInt64

    /// The running time now, or nil before the base time.
    var runningTime: UInt64? {
        let now = UInt64(gst_clock_get_time(clock))
        return now >= base ? now - base : nil
    }
}

/// The behaviour of `moqsrc`: properties, the connection, following the broadcast and
/// its catalog, the pads, the shared timeline, events and stats.
///
/// Threading: properties and state changes come from the application thread; the
/// session's events arrive on Swift tasks and are handled one at a time on a serial
/// control queue (which creates, switches and removes pads); each pad pushes from its
/// own GStreamer task. The network runs on the session's event loop and only fills the
/// tracks' caches.
final class MoqSrc: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    var reporter: ElementReporter { ElementReporter(element: element, category: MoqSrcType.category) }
    var events: PlayerEvents { PlayerEvents(reporter: reporter) }

    struct Settings {
        var connection = ConnectionSettings()
        var broadcast: String?
        var prefix: String?
        var latencyMs: UInt32 = 100
        var videoTrack: String?
        var audioTrack: String?
        var timeoutS: UInt32 = 10
        /// Whether TLS settings in a URI are honoured (``MoqSrcType/Prop/uriTLS``).
        var uriTLS = false
        /// TLS keys of the last URI, applied at start only if ``uriTLS`` allows.
        var uriTLSKeys: [(String, String)] = []
    }

    /// What exists between READY→PAUSED and PAUSED→READY. The control queue changes it; what
    /// streaming and application threads read (the pads, the stream collection, the broadcast)
    /// is under one lock, and the collection is referenced and released under it, so a reader
    /// never holds a collection the control queue has just freed.
    final class Running: @unchecked Sendable {
        /// State read off the control queue.
        struct Shared: @unchecked Sendable {  // only touched under `shared`
            var pads: [MediaKind: SrcPad] = [:]
            var collection: OpaquePointer?
            var broadcast: String?
        }
        private let shared = Lock(Shared())

        var pads: [MediaKind: SrcPad] {
            get { shared.withLock { $0.pads } }
            set { shared.withLock { $0.pads = newValue } }
        }
        var broadcast: String? {
            get { shared.withLock { $0.broadcast } }
            set { shared.withLock { $0.broadcast = newValue } }
        }

        /// A new reference to the current stream collection (the caller unrefs it).
        func referenceCollection() -> UnsafeMutablePointer<GstStreamCollection>? {
            shared.withLock { s in
                guard let c = s.collection else { return nil }
                gst_object_ref(UnsafeMutableRawPointer(c))
                return UnsafeMutablePointer(c)
            }
        }

        /// Replaces the stream collection (taking `new`'s reference), releasing the old one.
        func replaceCollection(_ new: UnsafeMutablePointer<GstStreamCollection>?) {
            // A GstObject reference: safe to hand between threads (its refcount is atomic).
            nonisolated(unsafe) let pointer = new.map { OpaquePointer($0) }
            shared.withLock { s in
                if let old = s.collection { gst_object_unref(UnsafeMutableRawPointer(old)) }
                s.collection = pointer
            }
        }

        // The rest is touched on the control queue only.
        let connection: ReconnectingSession
        let target: BroadcastTarget
        var follow: Task<Void, Never>?
        var statsTask: Task<Void, Never>?
        var session: MoqSession?
        var sessionEpoch: UInt64 = 0
        var sourceEpoch: UInt64 = 0
        /// The broadcast played last (kept after it ends).
        var lastBroadcast: String?
        var catalog: HangCatalog?
        var foundOnce = false
        var noMorePads = false
        var firstPadAt: UInt64?
        var settleScheduled = false
        var warned: Set<String> = []
        var collectionKey: [String] = []
        var selection: [MediaKind: String] = [:]

        init(connection: ReconnectingSession, target: BroadcastTarget) {
            self.connection = connection
            self.target = target
        }
    }

    private let settings = Lock(Settings())
    private let status = Atomic<Int32>(ReconnectingSession.Status.disconnected.rawValue)
    private let lastStats = Lock<SessionStats?>(nil)
    private let control = DispatchQueue(label: "moqsrc.control")
    private let onControl = DispatchSpecificKey<Bool>()
    /// Set on the control queue; read by the pads' threads.
    private let runningBox = Lock<Running?>(nil)
    private let playbackStarted = Atomic(false)
    private let hasPlayed = Atomic(false)
    private let groupIDValue = Atomic<UInt32>(0)
    private let startedAtValue = Atomic<UInt64>(0)
    private let pipelineLatencyNs = Atomic<UInt64>(0)
    /// How long after its running time a buffer is rendered: the pipeline's latency
    /// (LATENCY event), at least ours.
    var renderDelayNs: UInt64 { max(pipelineLatencyNs.load(ordering: .relaxed), latencyMs * 1_000_000) }
    /// The broadcast's timeline, shared by the pads.
    let timeline = Lock(PlayoutTimeline())

    init(element: UnsafeMutablePointer<GstElement>) {
        self.element = element
        control.setSpecific(key: onControl, value: true)
    }

    func finalize() { stop() }

    /// The group id of the current broadcast's streams.
    var groupID: guint { guint(groupIDValue.load(ordering: .relaxed)) }
    /// When playback was requested (monotonic ns).
    var startedAt: UInt64 { startedAtValue.load(ordering: .relaxed) }
    private var currentState: GstState { swiftmoq_element_current_state(element) }
    private var latencyMs: UInt64 { UInt64(settings.withLock { $0.latencyMs }) }

    // MARK: Properties

    func setProperty(_ id: guint, _ value: UnsafePointer<GValue>) {
        guard let prop = MoqSrcType.Prop(rawValue: id) else { return }
        let live = currentState.rawValue > GST_STATE_READY.rawValue
        switch prop {
        case .latency:
            let ms = g_value_get_uint(value)
            settings.withLock { $0.latencyMs = ms }
            if live { latencyChanged(UInt64(ms)) }
            return
        case .videoTrack, .audioTrack:
            let name = string(from: value)
            settings.withLock { if prop == .videoTrack { $0.videoTrack = name } else { $0.audioTrack = name } }
            if live { onControlQueue { self.selectionChanged() } }
            return
        default: break
        }
        if live {
            reporter.log(GST_LEVEL_WARNING, "property changes take effect only in NULL or READY: ignored")
            return
        }
        settings.withLock { s in
            switch prop {
            case .url: s.connection.url = string(from: value)
            case .broadcast: s.broadcast = string(from: value)
            case .prefix: s.prefix = string(from: value)
            case .tlsDisableVerify: s.connection.tlsDisableVerify = g_value_get_boolean(value) != 0
            case .tlsFingerprint: s.connection.tlsFingerprint = string(from: value)
            case .tlsRootFile: s.connection.tlsRootFile = string(from: value)
            case .authToken: s.connection.authToken = string(from: value)
            case .timeout: s.timeoutS = g_value_get_uint(value)
            case .uriTLS: s.uriTLS = g_value_get_boolean(value) != 0
            default: break
            }
        }
    }

    func getProperty(_ id: guint, _ value: UnsafeMutablePointer<GValue>) {
        guard let prop = MoqSrcType.Prop(rawValue: id) else { return }
        let s = settings.withLock { $0 }
        switch prop {
        case .url: g_value_set_string(value, s.connection.url)
        case .broadcast: g_value_set_string(value, s.broadcast)
        case .prefix: g_value_set_string(value, s.prefix)
        case .tlsDisableVerify: g_value_set_boolean(value, s.connection.tlsDisableVerify ? 1 : 0)
        case .tlsFingerprint: g_value_set_string(value, s.connection.tlsFingerprint)
        case .tlsRootFile: g_value_set_string(value, s.connection.tlsRootFile)
        case .authToken: g_value_set_string(value, s.connection.authToken)
        case .latency: g_value_set_uint(value, s.latencyMs)
        case .videoTrack: g_value_set_string(value, s.videoTrack)
        case .audioTrack: g_value_set_string(value, s.audioTrack)
        case .timeout: g_value_set_uint(value, s.timeoutS)
        case .uriTLS: g_value_set_boolean(value, s.uriTLS ? 1 : 0)
        case .status: g_value_set_enum(value, status.load(ordering: .relaxed))
        case .moqVersion:
            g_value_set_string(
                value,
                status.load(ordering: .relaxed) == ReconnectingSession.Status.connected.rawValue
                    ? MoqVersion.lite06.rawValue : nil)
        case .stats: g_value_take_boxed(value, makeStats(name: "application/x-moqsrc-stats"))
        }
    }

    /// Applies a playback URI (GstURIHandler).
    func setURI(_ uri: String) -> Result<Void, SettingsError> {
        if currentState.rawValue > GST_STATE_READY.rawValue {
            return .failure(SettingsError("the URI can only change in NULL or READY"))
        }
        let parsed: PlaybackURI
        do { parsed = try PlaybackURI(uri) } catch { return .failure(SettingsError(error.description)) }
        settings.withLock { s in
            s.connection.url = parsed.url
            s.broadcast = parsed.broadcast
            s.prefix = parsed.prefix
            s.uriTLSKeys = []
            for (key, value) in parsed.properties {
                switch key {
                case "latency": if let v = UInt32(value) { s.latencyMs = v }
                case "timeout": if let v = UInt32(value) { s.timeoutS = v }
                case "video-track": s.videoTrack = value
                case "audio-track": s.audioTrack = value
                // Kept aside: honoured at start only if the application allows it (uri-tls).
                case "tls-fingerprint", "tls-disable-verify": s.uriTLSKeys.append((key, value))
                default: break
                }
            }
        }
        return .success(())
    }

    /// TLS settings that came in a URI: applied when the application allows it (`uri-tls`, or
    /// SWIFTMOQ_URI_TLS=1), otherwise ignored with a warning that says how to allow them.
    private func applyURITLS() {
        let allowedByEnvironment = getenv("SWIFTMOQ_URI_TLS").map { String(cString: $0) == "1" } ?? false
        let (keys, allowed) = settings.withLock { s -> ([(String, String)], Bool) in
            let allowed = s.uriTLS || allowedByEnvironment
            if allowed {
                for (key, value) in s.uriTLSKeys {
                    if key == "tls-fingerprint" { s.connection.tlsFingerprint = value }
                    if key == "tls-disable-verify" { s.connection.tlsDisableVerify = value == "true" || value == "1" }
                }
            }
            return (s.uriTLSKeys, allowed)
        }
        guard !keys.isEmpty, !allowed else { return }
        reporter.warning(
            .resource(GST_RESOURCE_ERROR_SETTINGS),
            "the URI's \(keys.map(\.0).joined(separator: " and ")) ignored: TLS settings come from properties "
                + "(tls-fingerprint, tls-disable-verify); set uri-tls=true (or SWIFTMOQ_URI_TLS=1) to take them from URIs"
        )
    }

    /// The URI of the current settings (the explicit `?broadcast=` form).
    var uri: String? {
        let s = settings.withLock { $0 }
        guard let url = s.connection.url else { return nil }
        return PlaybackURI.compose(url: url, broadcast: s.broadcast, prefix: s.prefix)
    }

    // MARK: State

    func changeState(_ transition: GstStateChange) -> GstStateChangeReturn {
        switch transition {
        case GST_STATE_CHANGE_READY_TO_PAUSED:
            guard start() else { return GST_STATE_CHANGE_FAILURE }
        case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
            if hasPlayed.exchange(true, ordering: .relaxed) {
                timeline.withLock { $0.reanchorOnNextFrame() }
            }
        case GST_STATE_CHANGE_PAUSED_TO_READY:
            stop()
        default: break
        }
        var result = MoqSrcType.parentChangeState(element, transition)
        if result == GST_STATE_CHANGE_FAILURE { return result }
        // A live source: no preroll in PAUSED.
        if transition == GST_STATE_CHANGE_READY_TO_PAUSED || transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED {
            result = GST_STATE_CHANGE_NO_PREROLL
        }
        return result
    }

    private func start() -> Bool {
        applyURITLS()
        let s = settings.withLock { $0 }
        let url: MoqURL
        let options: ClientOptions
        switch s.connection.resolve() {
        case .failure(let e):
            reporter.error(.resource(GST_RESOURCE_ERROR_SETTINGS), e.description)
            return false
        case .success(let r): (url, options) = r
        }
        let target: BroadcastTarget
        switch (s.broadcast.flatMap { $0.isEmpty ? nil : $0 }, s.prefix) {
        case (let b?, nil):
            if let problem = BroadcastPath.validationError(b) {
                reporter.error(.resource(GST_RESOURCE_ERROR_SETTINGS), "invalid broadcast property '\(b)': \(problem)")
                return false
            }
            target = .exact(b)
        case (nil, let p?): target = .prefix(p)
        case (nil, nil):
            reporter.error(
                .resource(GST_RESOURCE_ERROR_SETTINGS),
                "no broadcast: set broadcast=<path> to play one broadcast, or prefix=<path> to play the first announced under it"
            )
            return false
        case (_?, _?):
            reporter.error(
                .resource(GST_RESOURCE_ERROR_SETTINGS), "set either broadcast or prefix, not both")
            return false
        }
        if options.tls.disableVerify {
            reporter.warning(
                .resource(GST_RESOURCE_ERROR_SETTINGS),
                "TLS certificate verification is disabled (tls-disable-verify): the relay is not authenticated")
        }
        startedAtValue.store(monotonicNow(), ordering: .relaxed)
        playbackStarted.store(false, ordering: .relaxed)
        hasPlayed.store(false, ordering: .relaxed)
        timeline.withLock { $0.reset() }
        pipelineLatencyNs.store(0, ordering: .relaxed)
        groupIDValue.store(UInt32(gst_util_group_id_next()), ordering: .relaxed)

        let weakSelf = WeakReference(self)
        var handlers = ReconnectingSession.Handlers()
        handlers.status = { status in weakSelf.value?.statusChanged(status) }
        handlers.transientError = { error in
            weakSelf.value?.reporter.warning(
                .resource(GST_RESOURCE_ERROR_OPEN_READ), "cannot play from the relay, retrying: \(error)")
        }
        handlers.fatalError = { error in
            weakSelf.value?.reporter.error(
                .resource(error.isAuthentication ? GST_RESOURCE_ERROR_NOT_AUTHORIZED : GST_RESOURCE_ERROR_OPEN_READ),
                error.description)
        }
        handlers.session = { session, start in
            guard let me = weakSelf.value else { return }
            me.onControlQueue { me.sessionUp(session, handover: start == .handover) }
        }
        let connection = ReconnectingSession(url: url, options: options, handlers: handlers)
        let run = Running(connection: connection, target: target)
        runningBox.withLock { $0 = run }
        run.statsTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let self, !Task.isCancelled else { return }
                if let session = connection.session {
                    let stats = await session.stats()
                    self.lastStats.withLock { $0 = stats }
                }
                if self.playbackStarted.load(ordering: .relaxed) {
                    self.reporter.elementMessage(self.makeStats(name: "stats"))
                }
            }
        }
        connection.start()
        return true
    }

    private func stop() {
        let teardown = { [self] in
            guard
                let run = runningBox.withLock({ r -> Running? in
                    defer { r = nil }; return r
                })
            else { return }
            run.follow?.cancel()
            run.statsTask?.cancel()
            run.connection.stop()
            for pad in run.pads.values { remove(pad) }
            run.pads = [:]
            run.replaceCollection(nil)
        }
        if DispatchQueue.getSpecific(key: onControl) == true { teardown() } else { control.sync(execute: teardown) }
    }

    private var run: Running? { runningBox.withLock { $0 } }

    private func onControlQueue(_ work: @escaping @Sendable () -> Void) {
        control.async(execute: work)
    }

    private func statusChanged(_ new: ReconnectingSession.Status) {
        status.store(new.rawValue, ordering: .relaxed)
        g_object_notify_by_pspec(
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self), MoqSrcType.statusSpec)
        reporter.log(GST_LEVEL_INFO, "status: \(new)")
    }

    /// The pipeline clock and the running time, when PLAYING (the caller unrefs the clock).
    func playingClock() -> PipelineTime? {
        guard currentState == GST_STATE_PLAYING, let clock = gst_element_get_clock(element) else { return nil }
        let time = PipelineTime(clock: clock, base: UInt64(swiftmoq_element_base_time(element)))
        guard time.runningTime != nil else {
            gst_object_unref(clock)
            return nil
        }
        return time
    }

    /// Called by a pad after each push: the first one is `playback.start`.
    func firstBufferPushed() {
        guard !playbackStarted.exchange(true, ordering: .relaxed) else { return }
        let s = settings.withLock { $0 }
        let run = self.run
        var fields: [(String, FieldValue)] = [
            ("broadcast", .string(run?.broadcast ?? s.broadcast ?? "")),
            ("target-buffering-ms", .uint64(UInt64(s.latencyMs))),
        ]
        for (kind, pad) in run?.pads ?? [:] {
            if let track = pad.trackName { fields.append(("\(kind)-track", .string(track))) }
        }
        events.post("playback.start", fields)
    }

    // MARK: Session and catalog (control queue)

    private func sessionUp(_ session: MoqSession, handover: Bool) {
        guard let run else { return }
        run.follow?.cancel()
        // A GOAWAY handover: the relay and the publisher go on, so the timeline continues and
        // the pads skip what they already pushed. After a loss (a restarted relay or
        // publisher) it is a discontinuity.
        run.session = session
        run.sessionEpoch += 1
        let epoch = run.sessionEpoch
        if !handover {
            run.sourceEpoch += 1
            timeline.withLock { $0.markDiscontinuity() }
        }
        let timeoutS = settings.withLock { $0.timeoutS }
        let timeout: Duration? = run.foundOnce || timeoutS == 0 ? nil : .seconds(Int64(timeoutS))
        let target = run.target
        reporter.log(GST_LEVEL_INFO, "connected: looking for \(target)")
        run.follow = Task { [weak self] in
            for await event in BroadcastFollower.follow(session, target: target, timeout: timeout) {
                guard let self else { return }
                self.onControlQueue { self.handle(event, session: session, epoch: epoch) }
            }
        }
    }

    private func handle(_ event: FollowEvent, session: MoqSession, epoch: UInt64) {
        guard let run, run.sessionEpoch == epoch else { return }
        switch event {
        case .found(let path):
            if let previous = run.lastBroadcast, previous != path {
                // Another broadcast (prefix mode): another publisher clock, so a new timeline
                // after what was played.
                run.sourceEpoch += 1
                timeline.withLock { $0.reanchorOnNextFrame() }
            } else if run.broadcast != path {
                run.sourceEpoch += 1
                timeline.withLock { $0.markDiscontinuity() }
            }
            run.lastBroadcast = path
            run.broadcast = path
            run.foundOnce = true
            reporter.log(GST_LEVEL_INFO, "playing broadcast \(path)")
        case .catalog(let path, let catalog):
            guard path == run.broadcast else { return }
            run.catalog = catalog
            reconcile(run, session: session)
        case .malformedCatalog(let path, let error):
            reporter.warning(
                .stream(GST_STREAM_ERROR_DECODE),
                "the catalog of \(path) is malformed: \(error); keeping the previous catalog")
        case .catalogFailed(let path, let error):
            reporter.warning(.resource(GST_RESOURCE_ERROR_READ), "the catalog of \(path) is unavailable: \(error)")
        case .ended(let path):
            reporter.log(GST_LEVEL_INFO, "broadcast \(path) ended")
            if run.broadcast == path { run.broadcast = nil }
            timeline.withLock { $0.markDiscontinuity() }
        case .notFound(let target):
            guard !run.foundOnce else { return }
            let url = run.connection.url.redacted
            reporter.error(
                .resource(GST_RESOURCE_ERROR_NOT_FOUND),
                "\(target) was not announced by \(url) within \(settings.withLock { $0.timeoutS }) s: check the name, "
                    + "and that the URL's path is the root it is published under (a broadcast room/cam published at "
                    + "moql://relay/anon is anon/room/cam at moql://relay/)")
        }
    }

    /// Pads follow the catalog: one per kind for the chosen renditions.
    private func reconcile(_ run: Running, session: MoqSession) {
        guard let catalog = run.catalog, let broadcast = run.broadcast else { return }
        let s = settings.withLock { $0 }
        let choice = RenditionChoice(
            catalog: catalog, video: run.selection[.video] ?? s.videoTrack,
            audio: run.selection[.audio] ?? s.audioTrack)
        for skipped in choice.skipped { warnOnce(run, "\(broadcast): \(skipped)") }
        for note in choice.notes { warnOnce(run, "\(broadcast): \(note)") }
        publishCollection(run, choice: choice, broadcast: broadcast)
        let eosOnEnd: Bool
        if case .exact = run.target { eosOnEnd = true } else { eosOnEnd = false }
        for (kind, wanted) in [(MediaKind.video, choice.video), (.audio, choice.audio)] {
            let existing = run.pads[kind]
            guard let wanted else {
                if let existing {
                    reporter.log(GST_LEVEL_INFO, "no \(kind) rendition to play any more: removing \(existing.name)")
                    remove(existing)
                    run.pads[kind] = nil
                }
                continue
            }
            let source = SrcPad.Source(
                session: session, broadcast: broadcast, rendition: wanted, epoch: run.sourceEpoch, eosOnEnd: eosOnEnd)
            if let existing {
                existing.play(source)
            } else if let pad = createPad(kind, source: source) {
                run.pads[kind] = pad
            }
        }
        noMorePadsWhenSettled(run, bothKinds: choice.video != nil && choice.audio != nil)
    }

    /// `no-more-pads` once the catalog has settled: at once when it has both kinds, else
    /// half a second after the first pad (publishers such as moqsink complete their catalog
    /// pad by pad as caps arrive, and gst-launch gives up delayed links at no-more-pads).
    private func noMorePadsWhenSettled(_ run: Running, bothKinds: Bool) {
        guard !run.noMorePads, !run.pads.isEmpty else { return }
        let now = monotonicNow()
        if run.firstPadAt == nil { run.firstPadAt = now }
        if bothKinds || now >= run.firstPadAt! + Self.padSettleNs {
            run.noMorePads = true
            reporter.log(GST_LEVEL_INFO, "no more pads")
            gst_element_no_more_pads(element)
        } else if !run.settleScheduled {
            run.settleScheduled = true
            control.asyncAfter(deadline: .now() + .nanoseconds(Int(Self.padSettleNs))) { [weak self, weak run] in
                guard let self, let run, self.run === run else { return }
                run.settleScheduled = false
                self.noMorePadsWhenSettled(run, bothKinds: false)
            }
        }
    }

    static let padSettleNs: UInt64 = 500_000_000

    private func selectionChanged() {
        guard let run, let session = run.session else { return }
        reconcile(run, session: session)
    }

    private func warnOnce(_ run: Running, _ text: String) {
        guard run.warned.insert(text).inserted else { return }
        reporter.warning(.stream(GST_STREAM_ERROR_CODEC_NOT_FOUND), text)
    }

    private func createPad(_ kind: MediaKind, source: SrcPad.Source) -> SrcPad? {
        let name = "\(kind)_0"
        let template = kind == .video ? MoqSrcType.videoTemplate : MoqSrcType.audioTemplate
        guard let pad = gst_pad_new_from_template(template, name) else { return nil }
        let srcPad = SrcPad(pad: pad, kind: kind, name: name, src: self, latencyMs: latencyMs)
        pad.pointee.element_private = Unmanaged.passUnretained(srcPad).toOpaque()
        gst_pad_set_query_function_full(
            pad, { pad, parent, query in MoqSrcType.src(UnsafeMutableRawPointer(parent)).query(pad!, query!) }, nil,
            nil)
        gst_pad_set_event_function_full(
            pad, { pad, parent, event in MoqSrcType.src(UnsafeMutableRawPointer(parent)).padEvent(pad!, event!) },
            nil, nil)
        gst_pad_use_fixed_caps(pad)
        gst_pad_set_active(pad, 1)
        // stream-start, caps and segment before the pad appears, so pad-added handlers see its caps.
        srcPad.prime(source)
        srcPad.start()
        gst_element_add_pad(element, pad)
        reporter.log(GST_LEVEL_INFO, "added \(name) for \(source.trackName) (\(source.rendition.caps))")
        return srcPad
    }

    private func remove(_ pad: SrcPad) {
        pad.stop()
        gst_pad_set_active(pad.pad, 0)
        pad.pad.pointee.element_private = nil
        gst_element_remove_pad(element, pad.pad)
    }

    // MARK: Streams (GstStreamCollection, select-streams)

    static func streamID(broadcast: String, track: String) -> String { "\(broadcast)/\(track)" }

    private func publishCollection(_ run: Running, choice: RenditionChoice, broadcast: String) {
        let key = choice.playable.map { "\($0.rendition.name)|\($0.caps)" } + [broadcast]
        let selected = [choice.video?.rendition.name, choice.audio?.rendition.name]
        guard run.collectionKey != key + selected.map({ $0 ?? "" }) else { return }
        run.collectionKey = key + selected.map { $0 ?? "" }
        let collection = gst_stream_collection_new(broadcast)!
        for playable in choice.playable {
            let caps = gst_caps_from_string(playable.caps)
            let isSelected = selected.contains(playable.rendition.name)
            let stream = gst_stream_new(
                Self.streamID(broadcast: broadcast, track: playable.rendition.name), caps,
                playable.rendition.config.kind == .video ? GST_STREAM_TYPE_VIDEO : GST_STREAM_TYPE_AUDIO,
                isSelected ? GST_STREAM_FLAG_SELECT : GST_STREAM_FLAG_NONE)
            if let caps { gst_caps_unref(caps) }
            gst_stream_collection_add_stream(collection, stream)
        }
        run.replaceCollection(collection)  // Running owns the new reference; the message takes its own
        gst_element_post_message(
            element,
            gst_message_new_stream_collection(
                UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), collection))
    }

    /// The current stream collection (a new reference), for the pads' STREAM_COLLECTION event.
    func collection() -> UnsafeMutablePointer<GstStreamCollection>? {
        run?.referenceCollection()
    }

    /// The collection's stream for a pad's source (a new reference).
    func stream(for source: SrcPad.Source) -> UnsafeMutablePointer<GstStream>? {
        guard let collection = run?.referenceCollection() else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(collection)) }
        let id = Self.streamID(broadcast: source.broadcast, track: source.trackName)
        for i in 0..<gst_stream_collection_get_size(collection) {
            guard let stream = gst_stream_collection_get_stream(collection, i),
                let sid = gst_stream_get_stream_id(stream), String(cString: sid) == id
            else { continue }
            gst_object_ref(stream)
            return stream
        }
        return nil
    }

    /// `select-streams` (decodebin3/playbin3): plays the selected rendition of each kind.
    func sendEvent(_ event: UnsafeMutablePointer<GstEvent>) -> Bool {
        switch swiftmoq_event_type(event) {
        case GST_EVENT_SELECT_STREAMS: break
        case GST_EVENT_EOS:
            // gst-launch -e, or an application finishing a recording: every pad ends its stream.
            gst_event_unref(event)
            let pads = run?.pads.values.map { $0 } ?? []
            reporter.log(GST_LEVEL_INFO, "EOS requested: ending \(pads.count) streams")
            for pad in pads { pad.requestEOS() }
            return true
        default:
            gst_event_unref(event)
            return false
        }
        var list: UnsafeMutablePointer<GList>?
        gst_event_parse_select_streams(event, &list)
        var ids: [String] = []
        var node = list
        while let n = node {
            if let p = n.pointee.data { ids.append(String(cString: p.assumingMemoryBound(to: CChar.self))) }
            node = n.pointee.next
        }
        g_list_free_full(list, g_free)
        gst_event_unref(event)
        let selected = ids
        onControlQueue { self.select(selected) }
        return true
    }

    private func select(_ ids: [String]) {
        guard let run, let catalog = run.catalog, let broadcast = run.broadcast, let session = run.session else {
            return
        }
        let playable = MediaFormat.playable(in: catalog).playable
        var selection: [MediaKind: String] = [.video: RenditionChoice.none, .audio: RenditionChoice.none]
        for id in ids {
            if let p = playable.first(where: { Self.streamID(broadcast: broadcast, track: $0.rendition.name) == id }) {
                selection[p.rendition.config.kind] = p.rendition.name
            } else {
                reporter.log(GST_LEVEL_WARNING, "select-streams: unknown stream \(id)")
            }
        }
        run.selection = selection
        reconcile(run, session: session)
        let current = run.referenceCollection()
        defer { if let current { gst_object_unref(UnsafeMutableRawPointer(current)) } }
        let message = gst_message_new_streams_selected(
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), current)
        for id in ids {
            if let p = playable.first(where: { Self.streamID(broadcast: broadcast, track: $0.rendition.name) == id }),
                let stream = stream(
                    for: SrcPad.Source(
                        session: session, broadcast: broadcast, rendition: p, epoch: 0, eosOnEnd: false))
            {
                gst_message_streams_selected_add(message, stream)
                gst_object_unref(stream)
            }
        }
        gst_element_post_message(element, message)
    }

    // MARK: Latency

    private func latencyChanged(_ ms: UInt64) {
        for pad in run?.pads.values.map({ $0 }) ?? [] { pad.latencyChanged(ms: ms) }
        reporter.log(GST_LEVEL_INFO, "latency now \(ms) ms")
        gst_element_post_message(
            element, gst_message_new_latency(UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self)))
    }

    /// Pad queries: LATENCY is the jitter budget (a live source).
    func query(_ pad: UnsafeMutablePointer<GstPad>, _ query: UnsafeMutablePointer<GstQuery>) -> gboolean {
        switch swiftmoq_query_type(query) {
        case GST_QUERY_LATENCY:
            gst_query_set_latency(query, 1, GstClockTime(latencyMs * 1_000_000), swiftmoq_clock_time_none())
            return 1
        case GST_QUERY_SCHEDULING:
            gst_query_set_scheduling(query, GST_SCHEDULING_FLAG_SEQUENTIAL, 1, -1, 0)
            gst_query_add_scheduling_mode(query, GST_PAD_MODE_PUSH)
            return 1
        default:
            return gst_pad_query_default(
                pad, UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), query)
        }
    }

    /// Upstream events on a pad: a live stream cannot seek.
    func padEvent(_ pad: UnsafeMutablePointer<GstPad>, _ event: UnsafeMutablePointer<GstEvent>) -> gboolean {
        switch swiftmoq_event_type(event) {
        case GST_EVENT_SEEK:
            gst_event_unref(event)
            return 0
        case GST_EVENT_SELECT_STREAMS:
            return sendEvent(event) ? 1 : 0
        case GST_EVENT_LATENCY:
            var latency: GstClockTime = 0
            gst_event_parse_latency(event, &latency)
            pipelineLatencyNs.store(UInt64(latency), ordering: .relaxed)
            reporter.log(GST_LEVEL_DEBUG, "pipeline latency \(UInt64(latency) / 1_000_000) ms")
            return gst_pad_event_default(
                pad, UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), event)
        default:
            return gst_pad_event_default(
                pad, UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), event)
        }
    }

    // MARK: Stats

    func makeStats(name: String) -> UnsafeMutablePointer<GstStructure> {
        let run = self.run
        let stats = lastStats.withLock { $0 }
        let now = monotonicNow()
        var fields: [(String, FieldValue)] = [
            (
                StatsKey.status.rawValue,
                .string(
                    ReconnectingSession.Status(rawValue: status.load(ordering: .relaxed))?.description ?? "disconnected"
                )
            ),
            (StatsKey.broadcast.rawValue, .string(run?.broadcast ?? "")),
            (StatsKey.reconnects.rawValue, .uint64(UInt64(run?.connection.reconnects ?? 0))),
            (StatsKey.handovers.rawValue, .uint64(UInt64(run?.connection.handovers ?? 0))),
            (StatsKey.roundTripTimeMs.rawValue, .double(Double(stats?.rttMicros ?? 0) / 1000)),
            (StatsKey.bytesReceived.rawValue, .uint64(stats?.bytesReceived ?? 0)),
            (StatsKey.packetsLost.rawValue, .uint64(stats?.packetsLost ?? 0)),
            (StatsKey.targetLatencyMs.rawValue, .uint64(latencyMs)),
        ]
        for kind in [MediaKind.video, .audio] {
            guard let pad = run?.pads[kind] else { continue }
            let s = pad.counters.snapshot(now: now)
            let k = kind.rawValue
            fields += [
                (StatsKey.PerKind.track.name(k), .string(pad.trackName ?? "")),
                (StatsKey.PerKind.latencyMs.name(k), .double(s.latencyMs)),
                (StatsKey.PerKind.fps.name(k), .double(s.fps)),
                (StatsKey.PerKind.bitrateKbps.name(k), .double(s.bitrateKbps)),
                (StatsKey.PerKind.frames.name(k), .uint64(s.frames)),
                (StatsKey.PerKind.framesDropped.name(k), .uint64(s.framesDropped)),
                (StatsKey.PerKind.groupsSkipped.name(k), .uint64(s.groupsSkipped)),
                (StatsKey.PerKind.stalls.name(k), .uint64(s.stalls)),
                (StatsKey.PerKind.stallDurationMs.name(k), .double(s.stallDurationMs)),
                (StatsKey.PerKind.bufferMs.name(k), .double(s.bufferMs)),
            ]
            if let first = s.timeToFirstFrameMs { fields.append((StatsKey.timeToFirstFrameMs(k), .double(first))) }
        }
        fields.append((StatsKey.retargets.rawValue, .uint64(UInt64(timeline.withLock { $0.retargets }))))
        return makeStructure(name, fields)
    }
}

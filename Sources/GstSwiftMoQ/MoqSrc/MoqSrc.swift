// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch
import GstSupport
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
        /// `latency-mode` (``LatencyMode``: auto by default, adaptive unless `latency` was set).
        var latencyMode = LatencyMode.auto
        /// `latency` was set (property or URI key): in auto mode, the user asked for a budget.
        var latencySet = false
        /// `catch-up`: live playback takes back the delay a stall added (``PlayoutPolicy/catchUp``).
        var catchUp = true

        /// How a playback with these settings places frames.
        var policy: PlayoutPolicy {
            PlayoutPolicy(
                buffering: longForm ? .longForm : .live, latencyMode: latencyMode, latencySet: latencySet,
                latencyMs: UInt64(latencyMs), catchUp: catchUp)
        }
        var videoTrack: String?
        var audioTrack: String?
        /// `abr`: adaptive bitrate over a ladder of video renditions, within `max-resolution`
        /// and `max-bitrate` (which apply without it too).
        var abr = true
        var maxWidth: UInt32 = 0
        var maxHeight: UInt32 = 0
        var maxBitrate: UInt32 = 0
        var renditionCap: RenditionCap {
            RenditionCap(maxWidth: maxWidth, maxHeight: maxHeight, maxBitrate: UInt64(maxBitrate))
        }
        var timeoutS: UInt32 = 10
        /// `buffering=long-form`: a deep buffer behind the live edge (``bufferDurationMs``).
        var longForm = false
        var bufferDurationMs: UInt32 = 30_000
        /// `data-tracks`: named tracks played on `data_%u` pads.
        var dataTracks: [String] = []
        /// `queue`: broadcasts to play after `broadcast`, in order.
        var queue: [String] = []
        /// Whether TLS settings in a URI are honoured (``MoqSrcType/Prop/uriTLS``).
        var uriTLS = false
        /// TLS keys of the last URI, applied at start only if ``uriTLS`` allows.
        var uriTLSKeys: [(String, String)] = []
        /// Values of the last URI that were not taken: warned about at start.
        var uriProblems: [URIValueProblem] = []
    }

    /// What exists between READY→PAUSED and PAUSED→READY. The control queue changes it; what
    /// streaming and application threads read (the pads, the stream collection, the broadcast)
    /// is under one lock, and the collection is referenced and released under it, so a reader
    /// never holds a collection the control queue has just freed.
    final class Running: @unchecked Sendable {
        /// State read off the control queue.
        struct Shared: @unchecked Sendable {  // only touched under `shared`
            var pads: [MediaKind: SrcPad] = [:]
            /// `data_%u` pads by track name.
            var dataPads: [String: DataPad] = [:]
            /// The `text_0` pad (the catalog's first caption rendition).
            var captionPad: CaptionPad?
            var collection: OpaquePointer?
            var broadcast: String?
        }
        private let shared = Lock(Shared())

        var pads: [MediaKind: SrcPad] {
            get { shared.withLock { $0.pads } }
            set { shared.withLock { $0.pads = newValue } }
        }
        var dataPads: [String: DataPad] {
            get { shared.withLock { $0.dataPads } }
            set { shared.withLock { $0.dataPads = newValue } }
        }
        var captionPad: CaptionPad? {
            get { shared.withLock { $0.captionPad } }
            set { shared.withLock { $0.captionPad = newValue } }
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
        let use: ElementConnection.Use
        var connection: ReconnectingSession { use.connection }
        var target: BroadcastTarget
        var follow: Task<Void, Never>?
        var statsTask: Task<Void, Never>?
        /// Reads the relay's PROBE reports on the current session (adaptive bitrate's hint).
        var probeTask: Task<Void, Never>?
        var session: MoqSession?
        var sessionEpoch: UInt64 = 0
        var sourceEpoch: UInt64 = 0
        /// The broadcast played last (kept after it ends).
        var lastBroadcast: String?
        var catalog: HangCatalog?
        var foundOnce = false
        /// The next broadcast of the queue (prefix or `queue` follow), its catalog once it
        /// arrived, and the source epoch its prerolled subscriptions carry.
        var upcoming: String?
        var upcomingCatalog: HangCatalog?
        var upcomingEpoch: UInt64 = 0
        /// Counts the follow tasks started: events of a replaced one are ignored.
        var followGeneration: UInt64 = 0
        var noMorePads = false
        var firstPadAt: UInt64?
        var settleScheduled = false
        /// When the first catalog of this playback arrived (monotonic ns).
        var firstCatalogAt: UInt64?
        /// Kinds whose track was asked for by name and is not listed yet: no pad for them until it
        /// is, or until ``MoqSrc/namedTrackGraceNs`` after the first catalog.
        var waitingForNamed: Set<MediaKind> = []
        var namedWaitScheduled = false
        var warned: Set<String> = []
        var collectionKey: [String] = []
        var selection: [MediaKind: String] = [:]
        /// The publisher's item last seen in the catalog (`swiftmoq.item`).
        var timelineItem: UInt64?
        /// The now-playing track followed (session, broadcast, track), and its reader.
        var nowPlayingKey: String?
        var nowPlayingTask: Task<Void, Never>?

        init(use: ElementConnection.Use, target: BroadcastTarget) {
            self.use = use
            self.target = target
        }
    }

    let settings = Lock(Settings())
    /// The relay link: connection properties, status, statistics.
    let link: ElementConnection
    let control = DispatchQueue(label: "moqsrc.control")
    private let onControl = DispatchSpecificKey<Bool>()
    /// Set on the control queue; read by the pads' threads.
    private let runningBox = Lock<Running?>(nil)
    /// One playback's facts, reset at READY→PAUSED: one lock instead of five atomics that a reader
    /// could see half-reset.
    private struct Playback {
        /// The first buffer was pushed (`playback.start` posted).
        var started = false
        /// PLAYING was reached once (a later PAUSED→PLAYING re-anchors the timeline).
        var hasPlayed = false
        /// The group id of the current broadcast's streams.
        var groupID: UInt32 = 0
        /// When playback was requested (monotonic ns).
        var startedAt: UInt64 = 0
        /// The pipeline's latency (LATENCY event).
        var pipelineLatencyNs: UInt64 = 0
        /// The seqnum of the last seek handled.
        var lastSeekSeqnum: UInt32?
        /// This playback's policy (decided at start: a `latency` set while playing changes the
        /// budget or the ceiling, not the mode).
        var policy: PlayoutPolicy?
    }
    private let playback = Lock(Playback())
    /// What the LATENCY query answers: the fixed budget, or 0 when adaptive (the margin then lives in
    /// the timeline's offset, so that it can grow without the pipeline reconfiguring its latency).
    /// Long-form playback has no adaptive margin: `latency` is its budget whatever `latency-mode` says.
    var reportedLatencyMs: UInt64 {
        let policy = playback.withLock { $0.policy }
        let (settingsPolicy, ms) = settings.withLock { ($0.policy, UInt64($0.latencyMs)) }
        return (policy ?? settingsPolicy).mode == .adaptive ? 0 : ms
    }
    /// Since when every media pad's last push returned NOT_LINKED (``combine(_:from:)``).
    let notLinkedSince = Lock<UInt64?>(nil)
    /// The relay's last PROBE report (bit/s; 0: none yet), from any thread.
    let probeReport = Atomic<UInt64>(0)
    /// The relay's last PROBE report (bit/s), if it sent one.
    var probeBps: UInt64? {
        let bps = probeReport.load(ordering: .relaxed)
        return bps > 0 ? bps : nil
    }
    /// `no-more-pads` was signalled in this playback (read by the pads' threads).
    let padsComplete = Atomic(false)
    /// `diagnostics`: pads post `moq-drop` messages.
    let diagnostics = Atomic(false)
    /// `playback.start` was posted in this playback.
    let firstPushDone = Atomic(false)
    /// The pipeline was seen PLAYING since the last start (``pipelinePlays()``).
    let pipelinePlaying = Atomic(false)
    /// Every timing and drop decision of this playback, shared by the pads (made at start).
    private let playoutBox = Lock<Playout?>(nil)
    var playout: Playout? { playoutBox.withLock { $0 } }

    /// The pipeline's latency, or a fixed budget that changed: what sinks wait after running time.
    private func updateRenderDelay() {
        let pipelineNs = playback.withLock { $0.pipelineLatencyNs }
        playout?.setRenderDelay(ns: max(pipelineNs, reportedLatencyMs * 1_000_000))
        for pad in run?.pads.values.map({ $0 }) ?? [] { pad.renderDelayChanged() }
    }

    init(element: UnsafeMutablePointer<GstElement>) {
        self.element = element
        link = ElementConnection(
            reporter: ElementReporter(element: element, category: MoqSrcType.category), role: .player,
            statusSpec: MoqSrcType.statusSpec)
        control.setSpecific(key: onControl, value: true)
    }

    func finalize() { stop() }

    /// A context from the application or a neighbour: a shared connection is taken.
    func setContext(_ context: OpaquePointer) {
        _ = link.adopt(context)
    }

    /// Records a seek's seqnum: false when that seek was already handled (it reaches the
    /// element once per sink).
    func recordSeek(_ seqnum: UInt32) -> Bool {
        playback.withLock { p in
            defer { p.lastSeekSeqnum = seqnum }
            return p.lastSeekSeqnum != seqnum
        }
    }

    /// The group id of the current broadcast's streams.
    var groupID: guint { guint(playback.withLock { $0.groupID }) }
    /// When playback was requested (monotonic ns).
    var startedAt: UInt64 { playback.withLock { $0.startedAt } }
    var currentState: GstState { swiftmoq_element_current_state(element) }
    var latencyMs: UInt64 { UInt64(settings.withLock { $0.latencyMs }) }
    /// The deep budget of long-form playback (ms); nil when playing live.
    var longFormBufferMs: UInt64? {
        settings.withLock { $0.longForm ? UInt64($0.bufferDurationMs) : nil }
    }

    // MARK: State

    func changeState(_ transition: GstStateChange) -> GstStateChangeReturn {
        switch transition {
        case GST_STATE_CHANGE_READY_TO_PAUSED:
            guard start() else { return GST_STATE_CHANGE_FAILURE }
        case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
            // Live playback resumes at the live edge; long-form resumes where it paused (the running
            // time stood still, and the buffer kept what arrived meanwhile).
            if playback.withLock({ p in
                defer { p.hasPlayed = true }; return p.hasPlayed
            }), !settings.withLock({ $0.longForm }) {
                playout?.rejoin(newClock: false)
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
        reportURIProblems()
        let s = settings.withLock { $0 }
        guard let relay = link.resolve(s.connection) else { return false }
        let target: BroadcastTarget
        switch (s.broadcast.flatMap { $0.isEmpty ? nil : $0 }, s.prefix) {
        case (let b?, nil):
            if let problem = BroadcastPath.validationError(b) {
                reporter.error(.resource(GST_RESOURCE_ERROR_SETTINGS), "invalid broadcast property '\(b)': \(problem)")
                return false
            }
            let queue = s.queue.filter { item in
                guard let problem = BroadcastPath.validationError(item) else { return true }
                reporter.warning(.resource(GST_RESOURCE_ERROR_SETTINGS), "queue: '\(item)' left out: \(problem)")
                return false
            }
            target = queue.isEmpty ? .exact(b) : .queue([b] + queue)
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
        let policy = settings.withLock { $0.policy }
        let fresh = Playback(groupID: UInt32(gst_util_group_id_next()), startedAt: monotonicNow(), policy: policy)
        playback.withLock { $0 = fresh }
        padsComplete.store(false, ordering: .relaxed)
        firstPushDone.store(false, ordering: .relaxed)
        pipelinePlaying.store(false, ordering: .relaxed)
        notLinkedSince.withLock { $0 = nil }
        let playout = Playout(policy: policy)
        playout.setRenderDelay(ns: policy.reportedLatencyNs)
        playoutBox.withLock { $0 = playout }
        reporter.log(
            GST_LEVEL_INFO,
            "playout: \(policy.modeName), latency \(policy.latencyNs / 1_000_000) ms, catch-up \(policy.catchUp)"
                + (s.latencyMode == .auto && s.latencySet && !s.longForm
                    ? " (latency-mode=auto with latency set: a fixed budget)" : ""))

        let weakSelf = WeakReference(self)
        let use = link.open(relay) { session, start in
            guard let me = weakSelf.value else { return }
            me.onControlQueue { me.sessionUp(session, handover: start == .handover) }
        }
        let run = Running(use: use, target: target)
        let connection = use.connection
        runningBox.withLock { $0 = run }
        // The task posts to the element after awaiting: it keeps its own reference, so an
        // application that drops the pipeline while stats are being refreshed never has a message
        // posted on a freed element (seen as g_object_ref / GST_IS_ELEMENT criticals).
        let element = UncheckedPointer(self.element)
        gst_object_ref(UnsafeMutableRawPointer(element.pointer))
        run.statsTask = Task { [weak self] in
            defer { gst_object_unref(UnsafeMutableRawPointer(element.pointer)) }
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let self, !Task.isCancelled else { return }
                await self.link.refreshStats(connection)
                if !Task.isCancelled, self.playback.withLock({ $0.started }) {
                    self.reporter.elementMessage(self.makeStats(name: "stats"))
                }
            }
        }
        link.start(use)
        if s.timeoutS > 0 { failIfNeverConnected(run, within: s.timeoutS) }
        return true
    }

    /// Posts an ERROR if `run` has had no session `seconds` after it started: a relay that never
    /// answers (wrong host or port, UDP blocked, nothing listening) is not retried in silence forever.
    /// Once a session came up, losing it is retried as long as it takes (WARNINGs only).
    private func failIfNeverConnected(_ run: Running, within seconds: UInt32) {
        let weakSelf = WeakReference(self)
        control.asyncAfter(deadline: .now() + .seconds(Int(seconds))) {
            guard let me = weakSelf.value, let current = me.run, current === run, run.session == nil else { return }
            let why = me.link.lastRetryError.map { " (\($0))" } ?? ""
            me.reporter.error(
                .resource(GST_RESOURCE_ERROR_OPEN_READ),
                "could not connect to \(run.connection.url.redacted) within \(seconds) s\(why): check that the relay "
                    + "runs at that host and port, that UDP can reach it, and the TLS settings (tls-fingerprint, "
                    + "tls-root-file); timeout=0 keeps retrying")
        }
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
            run.probeTask?.cancel()
            run.nowPlayingTask?.cancel()
            link.stop(run.use)
            for pad in run.pads.values { remove(pad) }
            run.pads = [:]
            for pad in run.dataPads.values { remove(pad) }
            run.dataPads = [:]
            if let caption = run.captionPad { remove(caption) }
            run.captionPad = nil
            run.replaceCollection(nil)
        }
        if DispatchQueue.getSpecific(key: onControl) == true { teardown() } else { control.sync(execute: teardown) }
    }

    var run: Running? { runningBox.withLock { $0 } }

    func onControlQueue(_ work: @escaping @Sendable () -> Void) {
        control.async(execute: work)
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

    /// Called by a pad after each push: the first one is `playback.start`, naming the tracks played
    /// (the pushing pad's own, even when the control queue has not recorded the pad yet: a pad's task
    /// may push before `createPad` returns).
    func firstBufferPushed(by pusher: SrcPad) {
        // Every push asks: one atomic load once playback started.
        guard !firstPushDone.load(ordering: .relaxed) else { return }
        guard
            !playback.withLock({ p in
                defer { p.started = true }; return p.started
            })
        else { return }
        firstPushDone.store(true, ordering: .relaxed)
        let s = settings.withLock { $0 }
        let run = self.run
        var fields: [(String, FieldValue)] = [
            ("broadcast", .string(run?.broadcast ?? s.broadcast ?? "")),
            ("target-buffering-ms", .uint64(UInt64(s.latencyMs))),
        ]
        var pads = run?.pads ?? [:]
        pads[pusher.kind] = pusher
        for (kind, pad) in pads.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            if let track = pad.trackName { fields.append(("\(kind)-track", .string(track))) }
        }
        events.post("playback.start", fields)
    }

    // MARK: Latency

    func latencyChanged(_ ms: UInt64) {
        playout?.setAdaptiveCeiling(ns: ms * 1_000_000)
        updateRenderDelay()
        for pad in run?.pads.values.map({ $0 }) ?? [] { pad.latencyChanged(ms: ms) }
        reporter.log(GST_LEVEL_INFO, "latency now \(ms) ms")
        gst_element_post_message(
            element, gst_message_new_latency(UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self)))
    }

    /// Pad queries: LATENCY is the jitter budget (a live source).
    func query(_ pad: UnsafeMutablePointer<GstPad>, _ query: UnsafeMutablePointer<GstQuery>) -> gboolean {
        switch swiftmoq_query_type(query) {
        case GST_QUERY_LATENCY:
            gst_query_set_latency(query, 1, GstClockTime(reportedLatencyMs * 1_000_000), swiftmoq_clock_time_none())
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

    /// Upstream events on a pad: a seek (long-form only), stream selection, the pipeline's latency.
    func padEvent(_ pad: UnsafeMutablePointer<GstPad>, _ event: UnsafeMutablePointer<GstEvent>) -> gboolean {
        switch swiftmoq_event_type(event) {
        case GST_EVENT_SEEK:
            defer { gst_event_unref(event) }
            return seek(event) ? 1 : 0
        case GST_EVENT_SELECT_STREAMS:
            return sendEvent(event) ? 1 : 0
        case GST_EVENT_LATENCY:
            var latency: GstClockTime = 0
            gst_event_parse_latency(event, &latency)
            playback.withLock { $0.pipelineLatencyNs = UInt64(latency) }
            updateRenderDelay()
            reporter.log(GST_LEVEL_DEBUG, "pipeline latency \(UInt64(latency) / 1_000_000) ms")
            return gst_pad_event_default(
                pad, UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), event)
        default:
            return gst_pad_event_default(
                pad, UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), event)
        }
    }

}

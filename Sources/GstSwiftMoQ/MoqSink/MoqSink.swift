// SPDX-License-Identifier: MIT
import CGStreamer
import FoundationEssentials
import GstSupport
import MoqCatalog
import MoqPlayback
import MoqSync
import SwiftMoQ
import Synchronization

/// The behaviour of `moqsink`: properties, pads, the broadcast and the connection.
///
/// Threading: properties and state changes come from the application thread; each
/// pad's buffers and events from its streaming thread, which only ever appends to
/// the in-memory broadcast (``TrackProducer``) and returns; the network runs on the
/// session's event loop. Nothing here waits for the network.
final class MoqSink: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    var reporter: ElementReporter { ElementReporter(element: element, category: MoqSinkType.category) }

    struct Settings {
        var connection = ConnectionSettings()
        var broadcast: String?
        /// `cache-duration`: every track's max age (ms).
        var cacheDurationMs: UInt32 = 30_000
        /// `keyframe-interval` (ms): the keyframe grid of a ladder (several video pads).
        var keyframeIntervalMs: UInt32 = 2_000
    }

    /// What exists between READY→PAUSED and PAUSED→READY.
    final class Running: @unchecked Sendable {
        let use: ElementConnection.Use
        var connection: ReconnectingSession { use.connection }
        let broadcast: BroadcastProducer
        let catalogTrack: TrackProducer
        let catalog = Lock(HangCatalog())
        let eosPosted = Atomic(false)
        /// The publisher's item and the timestamp it started at (catalog `swiftmoq.item`).
        let timelineItem = Lock<(item: UInt64, startUs: UInt64)?>(nil)
        /// Whether any pad's input is live (catalog `swiftmoq.live`); nil until one answered.
        let upstreamLive = Lock<Bool?>(nil)
        /// What is playing, from the pads' tags, and its track once the first tags came.
        let nowPlaying = Lock<(value: NowPlaying, track: TrackProducer?)>((NowPlaying(), nil))
        var statsTask: Task<Void, Never>?

        init(use: ElementConnection.Use, broadcast: BroadcastProducer, catalogTrack: TrackProducer) {
            self.use = use
            self.broadcast = broadcast
            self.catalogTrack = catalogTrack
        }
    }

    private let settings = Lock(Settings())
    /// The `item` property: changeable while playing, read by every pad for each buffer.
    private let item = Atomic<UInt64>(0)
    /// The item the pads' next groups belong to.
    var requestedItem: UInt64 { item.load(ordering: .relaxed) }
    private let running = Lock<Running?>(nil)
    private let pads = Lock<[SinkPad]>([])
    private let nextIndex = Lock(0)
    private let link: ElementConnection

    init(element: UnsafeMutablePointer<GstElement>) {
        self.element = element
        link = ElementConnection(
            reporter: ElementReporter(element: element, category: MoqSinkType.category), role: .publisher,
            statusSpec: MoqSinkType.statusSpec)
    }

    func finalize() {
        stop()
    }

    /// A context from the application or a neighbour: a shared connection is taken.
    func setContext(_ context: OpaquePointer) {
        _ = link.adopt(context)
    }

    // MARK: Properties

    private var currentState: GstState { swiftmoq_element_current_state(element) }

    /// The keyframe grid's period (ns) while several video pads publish (a ladder); 0: none.
    private let keyframeGrid = Atomic<UInt64>(0)
    var keyframeGridNs: UInt64 { keyframeGrid.load(ordering: .relaxed) }

    /// A pad's caps made it a video pad or not, or one was released: whether the grid applies.
    func videoPadsChanged() {
        let videoPads = pads.withLock { $0.filter(\.isVideo).count }
        let ms = settings.withLock { $0.keyframeIntervalMs }
        let period = videoPads >= 2 ? UInt64(ms) * 1_000_000 : 0
        if keyframeGrid.exchange(period, ordering: .relaxed) != period, period > 0 {
            reporter.log(
                GST_LEVEL_INFO, "\(videoPads) video pads: keyframes asked for every \(ms) ms, aligned across them")
        }
    }

    /// Every track's max age (ms): what it keeps for late joiners, and asks the relay to keep.
    var cacheDurationMs: UInt64 { UInt64(settings.withLock { $0.cacheDurationMs }) }

    func setProperty(_ id: guint, _ value: UnsafePointer<GValue>) {
        guard let prop = MoqSinkType.Prop(rawValue: id) else { return }
        if prop == .item {
            let value = UInt64(g_value_get_uint(value))
            if item.exchange(value, ordering: .relaxed) != value {
                reporter.log(GST_LEVEL_INFO, "item \(value): the next group of every track starts it")
            }
            return
        }
        if currentState.rawValue > GST_STATE_READY.rawValue {
            reporter.log(GST_LEVEL_WARNING, "property changes take effect only in NULL or READY: ignored")
            return
        }
        settings.withLock { s in
            if let connection = prop.connection {
                s.connection.set(connection, from: value)
            } else if prop == .broadcast {
                s.broadcast = string(from: value)
            } else if prop == .cacheDuration {
                s.cacheDurationMs = g_value_get_uint(value)
            } else if prop == .keyframeInterval {
                s.keyframeIntervalMs = g_value_get_uint(value)
            }
        }
        if prop == .keyframeInterval { videoPadsChanged() }
    }

    func getProperty(_ id: guint, _ value: UnsafeMutablePointer<GValue>) {
        guard let prop = MoqSinkType.Prop(rawValue: id) else { return }
        let s = settings.withLock { $0 }
        if let connection = prop.connection { return s.connection.get(connection, into: value) }
        if let status = prop.statusProperty { return status.get(link, into: value) }
        switch prop {
        case .broadcast: g_value_set_string(value, s.broadcast)
        case .cacheDuration: g_value_set_uint(value, s.cacheDurationMs)
        case .keyframeInterval: g_value_set_uint(value, s.keyframeIntervalMs)
        case .item: g_value_set_uint(value, guint(truncatingIfNeeded: requestedItem))
        case .status: link.getStatus(into: value)
        case .connected: g_value_set_boolean(value, link.status == .connected ? 1 : 0)
        case .moqVersion: g_value_set_string(value, link.negotiatedVersion)
        case .stats: g_value_take_boxed(value, makeStats())
        case .url, .tlsDisableVerify, .tlsFingerprint, .tlsRootFile, .authToken, .quicIdleTimeout, .quicKeepAlive,
            .moqProtocol,
            .connectionStats, .sessions, .estimatedSendRate, .estimatedRecvRate, .estimatedSendBitrate,
            .estimatedRecvBitrate:
            break
        }
    }

    // MARK: State

    func changeState(_ transition: GstStateChange) -> GstStateChangeReturn {
        if transition == GST_STATE_CHANGE_READY_TO_PAUSED {
            guard start() else { return GST_STATE_CHANGE_FAILURE }
        }
        let result = MoqSinkType.parentChangeState(element, transition)
        if transition == GST_STATE_CHANGE_PAUSED_TO_READY {
            stop()
        }
        return result
    }

    private func start() -> Bool {
        let s = settings.withLock { $0 }
        guard let target = link.resolve(s.connection) else { return false }
        guard let path = s.broadcast, !path.isEmpty else {
            reporter.error(
                .resource(GST_RESOURCE_ERROR_SETTINGS),
                "no broadcast: set the broadcast property, e.g. broadcast=room/cam")
            return false
        }
        if let problem = BroadcastPath.validationError(path) {
            reporter.error(.resource(GST_RESOURCE_ERROR_SETTINGS), "invalid broadcast property '\(path)': \(problem)")
            return false
        }
        let broadcast = BroadcastProducer(path: path)
        let reporter = self.reporter
        let use = link.open(target) { session, _ in
            session.publish(broadcast)
            reporter.log(GST_LEVEL_INFO, "connected: publishing \(broadcast.path)")
        }
        let catalogTrack = broadcast.createTrack(
            HangCatalog.trackName, info: TrackInfo(priority: 100, maxAgeMs: 5000, timescale: 1000))
        let run = Running(use: use, broadcast: broadcast, catalogTrack: catalogTrack)
        let connection = use.connection
        running.withLock { $0 = run }
        for pad in pads.withLock({ $0 }) { pad.attach(to: self) }
        let link = self.link
        run.statsTask = Task {
            while !Task.isCancelled {
                await link.refreshStats(connection)
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        link.start(use)
        return true
    }

    private func stop() {
        guard
            let run = running.withLock({ r -> Running? in
                defer { r = nil }; return r
            })
        else { return }
        run.statsTask?.cancel()
        for pad in pads.withLock({ $0 }) { pad.detach() }
        run.broadcast.close()
        link.stop(run.use)
    }

    var run: Running? { running.withLock { $0 } }

    // MARK: Pads

    func requestPad(template: UnsafeMutablePointer<GstPadTemplate>, name: String?) -> UnsafeMutablePointer<GstPad>? {
        let index: Int = nextIndex.withLock { next in
            var index = next
            if let name, name.hasPrefix("sink_"), let n = Int(name.dropFirst(5)) { index = n }
            next = max(next, index + 1)
            return index
        }
        let padName = name ?? "sink_\(index)"
        if pads.withLock({ $0.contains { $0.name == padName } }) {
            reporter.log(GST_LEVEL_WARNING, "a pad named \(padName) already exists")
            return nil
        }
        guard let pad = gst_pad_new_from_template(template, padName) else { return nil }
        let sinkPad = SinkPad(pad: pad, name: padName, index: index)
        MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).runtime = sinkPad
        gst_pad_set_chain_function_full(
            pad,
            { pad, parent, buffer in
                MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).runtime!.chain(buffer!)
            }, nil, nil)
        gst_pad_set_event_function_full(
            pad,
            { pad, parent, event in
                MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).runtime!.event(event!, parent: parent)
            }, nil, nil)
        pads.withLock { $0.append(sinkPad) }
        if currentState.rawValue > GST_STATE_READY.rawValue {
            gst_pad_set_active(pad, 1)
            sinkPad.attach(to: self)
        }
        gst_element_add_pad(element, pad)
        gst_child_proxy_child_added(
            OpaquePointer(element), UnsafeMutableRawPointer(pad).assumingMemoryBound(to: GObject.self), padName)
        return pad
    }

    func releasePad(_ pad: UnsafeMutablePointer<GstPad>) {
        let removed = pads.withLock { list -> SinkPad? in
            guard let i = list.firstIndex(where: { $0.pad == pad }) else { return nil }
            return list.remove(at: i)
        }
        if let removed {
            removed.release()
            videoPadsChanged()
            gst_child_proxy_child_removed(
                OpaquePointer(element), UnsafeMutableRawPointer(pad).assumingMemoryBound(to: GObject.self), removed.name
            )
        }
        gst_element_remove_pad(element, pad)
    }

    // MARK: Catalog and EOS (called by pads)

    /// A pad began a group of `item` at `micros`: the first pad to do so sets where the item
    /// starts, and the catalog says so (players jump there).
    func itemStarted(_ item: UInt64, atUs micros: UInt64) {
        guard let run else { return }
        let first = run.timelineItem.withLock { current -> Bool in
            guard current?.item != item else { return false }
            current = (item, micros)
            return true
        }
        guard first else { return }
        reporter.log(GST_LEVEL_INFO, "item \(item) starts at \(micros) µs")
        updateCatalog(track: nil, config: nil)
    }

    /// Tags from a pad: what changed in title, artist, album, duration or artwork becomes the next
    /// group of the now-playing track (made, and named in the catalog, at the first tags).
    func tagsArrived(_ list: UnsafeMutablePointer<GstTagList>) {
        guard let run else { return }
        let tags = TagReading(list)
        let (json, created): ([UInt8]?, Bool) = run.nowPlaying.withLock { state in
            var next = state.value
            if let title = tags.string("title") { next.title = title }
            if let artist = tags.string("artist") { next.artist = artist }
            if let album = tags.string("album") { next.album = album }
            if let ns = tags.uint64("duration"), ns > 0 { next.durationMs = ns / 1_000_000 }
            if let image = tags.image("image") ?? tags.image("preview-image"),
                image.data.count <= NowPlaying.maxArtworkBytes
            {
                next.artwork = NowPlaying.Artwork(mimeType: image.mimeType, data: image.data)
            }
            guard next != state.value || (state.track == nil && !next.isEmpty) else { return (nil, false) }
            state.value = next
            var created = false
            if state.track == nil {
                state.track = run.broadcast.createTrack(
                    NowPlaying.trackName, info: TrackInfo(priority: 10, maxAgeMs: cacheDurationMs, timescale: 1_000_000)
                )
                created = true
            }
            return (next.jsonBytes(), created)
        }
        guard let json else { return }
        run.nowPlaying.withLock { $0.track }?.writeSingleFrameGroup(Bytes(json), timestamp: 0)
        reporter.log(GST_LEVEL_INFO, "now playing: \(String(decoding: json.prefix(200), as: UTF8.self))")
        if created { updateCatalog(track: nil, config: nil) }
    }

    /// A pad learnt whether its input is live: the broadcast is live when any input is.
    func noteUpstream(live: Bool?) {
        guard let live, let run else { return }
        run.upstreamLive.withLock { $0 = ($0 ?? false) || live }
    }

    /// Sets (or removes) a pad's rendition and publishes the new catalog snapshot.
    /// `track` nil: only SwiftMoQ's member changes.
    func updateCatalog(track: String?, config: RenditionConfig?) {
        updateCatalog { catalog in
            if let track {
                if let config { catalog.set(track, config) } else { catalog.remove(track) }
            }
        }
    }

    /// Adds, replaces (`config`) or removes (nil) the caption rendition published as `track`.
    func updateCatalog(caption track: String, config: CaptionConfig?) {
        updateCatalog { catalog in
            if let config {
                catalog.remove(track)
                catalog.captions.renditions[track] = config
            } else {
                catalog.remove(track)
            }
        }
    }

    /// Applies `change` and publishes the catalog.
    ///
    /// Built and written under the catalog's lock: each pad calls this from its own streaming thread
    /// (a ladder's branches end in queues), and a snapshot built first but written second took the
    /// newer group number — a stale catalog (one rung without its bitrate, or missing) stayed the
    /// latest for as long as nothing else changed (two ladder tests waited 30 s for their "lo" rung).
    private func updateCatalog(_ change: (inout HangCatalog) -> Void) {
        guard let run else { return }
        let epoch = clockEpochMicros()
        let json: [UInt8] = run.catalog.withLock { catalog in
            change(&catalog)
            // Where the timeline is on the wall clock, for viewers that show publish-to-render
            // latency (the watch page), and the publisher's item. Hang readers ignore the member.
            var member = SwiftMoQExtension(catalog: catalog)
            if let epoch { member.clockEpochUs = epoch }
            if let item = run.timelineItem.withLock({ $0 }) {
                (member.item, member.itemStartUs) = (item.item, item.startUs)
            }
            member.live = run.upstreamLive.withLock { $0 }
            member.nowPlayingTrack = run.nowPlaying.withLock { $0.track?.name }
            member.write(into: &catalog)
            let json = catalog.jsonBytes()
            // One complete snapshot per group; the timestamp is wall-clock ms since 2020-01-01 (hang's epoch).
            let epoch2020 = 1_577_836_800.0
            let ms = UInt64(max(0, (Date().timeIntervalSince1970 - epoch2020) * 1000))
            run.catalogTrack.writeSingleFrameGroup(Bytes(json), timestamp: ms)
            return json
        }
        reporter.log(GST_LEVEL_INFO, "catalog: \(String(decoding: json, as: UTF8.self))")
    }

    /// The Unix time in µs at running time 0: a frame's timestamp (its running time in µs) plus
    /// this is when it was captured. Nil until the element runs on a clock.
    func clockEpochMicros() -> UInt64? {
        guard let clock = gst_element_get_clock(element) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        let now = UInt64(gst_clock_get_time(clock))
        let base = UInt64(swiftmoq_element_base_time(element))
        guard swiftmoq_clock_time_is_valid(GstClockTime(now)) != 0, base > 0, now >= base else { return nil }
        let wallMicros = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        let runningMicros = (now - base) / 1000
        return wallMicros >= runningMicros ? wallMicros - runningMicros : nil
    }

    /// How long EOS (gst-launch-1.0 -e and Ctrl-C) may wait for what was captured to be delivered:
    /// for a session when the connection is reconnecting, then for the relay to subscribe again,
    /// then for the subscribers to take everything queued. EOS is posted after that at the latest.
    static let eosDeliveryTimeout: Duration = .seconds(10)

    /// A pad reached EOS; when all have, the broadcast ends cleanly and EOS is posted
    /// once everything was delivered (within ``eosDeliveryTimeout``).
    func padReachedEOS() {
        guard let run else { return }
        let all = pads.withLock { $0.allSatisfy(\.isEOS) }
        guard all, !run.eosPosted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let element = UncheckedPointer(self.element)
        let reporter = self.reporter
        // The task may outlive the pipeline's hold on the element (an application that stops the
        // pipeline while EOS is still being delivered): it keeps its own reference.
        gst_object_ref(UnsafeMutableRawPointer(element.pointer))
        Task {
            defer { gst_object_unref(UnsafeMutableRawPointer(element.pointer)) }
            run.catalogTrack.finish()
            await Self.deliver(run, reporter: reporter)
            reporter.log(GST_LEVEL_INFO, "all pads reached EOS: broadcast complete")
            let message = gst_message_new_eos(
                UnsafeMutableRawPointer(element.pointer).assumingMemoryBound(to: GstObject.self))
            gst_element_post_message(element.pointer, message)
        }
    }

    /// Waits (bounded) until what the broadcast captured reached the relay: a publisher that is
    /// reconnecting at EOS keeps its cache, so the groups captured during the outage go out once
    /// the relay, asked by its subscribers, subscribes again.
    private static func deliver(_ run: Running, reporter: ElementReporter) async {
        let deadline = ContinuousClock.now + eosDeliveryTimeout
        let tracks = run.broadcast.trackNames.filter { $0 != HangCatalog.trackName }.compactMap {
            run.broadcast.existingTrack($0)
        }.filter { $0.latestGroup != nil }
        // Who had read each track before the outage ended: a new reader after it is the relay asking again.
        let readersBefore = tracks.map(\.observersAdded)
        // A session told to go away by a relay shutting down stays until it closes: only an open one counts.
        func open() -> MoqSession? { run.connection.session.flatMap { $0.closeReason == nil ? $0 : nil } }
        var session = open()
        let wasReconnecting = session == nil
        // Only a publisher that was connected waits (reconnecting, or connected while its session is
        // being replaced after GOAWAY): one that never reached the relay (a wrong URL, no relay yet)
        // ends at once, as Ctrl-C should.
        func wasConnected() -> Bool { [.reconnecting, .connected].contains(run.connection.status) }
        while session == nil, ContinuousClock.now < deadline, wasConnected() {
            try? await Task.sleep(for: .milliseconds(20))
            session = open()
        }
        guard let session else {
            reporter.log(GST_LEVEL_WARNING, "EOS while not connected: what was captured is not delivered")
            return
        }
        if wasReconnecting {
            reporter.log(GST_LEVEL_INFO, "EOS while reconnecting: delivering what was captured during the outage")
            // The relay subscribes again once its subscribers have (each reconnects on its own).
            // Every track that holds something read again since (a track nobody reads any more keeps
            // EOS waiting until the deadline).
            func allReadAgain() -> Bool { zip(tracks, readersBefore).allSatisfy { $0.observersAdded > $1 } }
            while ContinuousClock.now < deadline, !allReadAgain() {
                try? await Task.sleep(for: .milliseconds(20))
            }
            // Its first groups go out on the session's loop right after the subscription.
            try? await Task.sleep(for: .milliseconds(100))
        }
        let remaining = deadline - ContinuousClock.now
        if remaining > .zero { await session.drain(timeout: remaining) }
    }

    // MARK: Stats

    private func makeStats() -> UnsafeMutablePointer<GstStructure> {
        let run = self.run
        let stats = link.lastStats
        var fields: [(String, FieldValue)] = [
            (StatsKey.status.rawValue, .string(link.status.description)),
            (StatsKey.reconnects.rawValue, .uint64(UInt64(run?.connection.reconnects ?? 0))),
            (StatsKey.handovers.rawValue, .uint64(UInt64(run?.connection.handovers ?? 0))),
            (StatsKey.roundTripTimeMs.rawValue, .double(Double(stats?.rttMicros ?? 0) / 1000)),
            (StatsKey.rttMicros.rawValue, .uint64(stats?.rttMicros ?? 0)),
            (StatsKey.sendRateBps.rawValue, .uint64(stats?.sendRateBps ?? 0)),
            (StatsKey.bytesSent.rawValue, .uint64(stats?.bytesSent ?? 0)),
            (StatsKey.packetsLost.rawValue, .uint64(stats?.packetsLost ?? 0)),
            (
                StatsKey.groupsDropped.rawValue,
                .uint64(
                    (stats?.counters.groupsResetAsOld ?? 0) + (stats?.counters.groupsDroppedForBudget ?? 0)
                        + (stats?.counters.groupsDroppedForCredit ?? 0))
            ),
        ]
        for pad in pads.withLock({ $0 }) {
            guard let name = pad.trackName else { continue }
            let s = pad.stats
            fields.append(
                (
                    name,
                    .structure(
                        makeStructure(
                            "track",
                            [
                                (StatsKey.PerTrack.pad.rawValue, .string(pad.name)),
                                (StatsKey.PerTrack.frames.rawValue, .uint64(s.frames)),
                                (StatsKey.PerTrack.groups.rawValue, .uint64(s.groups)),
                                (StatsKey.PerTrack.bytes.rawValue, .uint64(s.bytes)),
                                (StatsKey.PerTrack.framesDropped.rawValue, .uint64(s.dropped)),
                            ]))
                ))
        }
        return makeStructure("application/x-moqsink-stats", fields)
    }
}

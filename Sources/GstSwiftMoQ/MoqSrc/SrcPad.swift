// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog
import MoqMedia
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// One `video_%u` / `audio_%u` pad of `moqsrc`: a GStreamer task (its streaming thread)
/// that reads its rendition's track from the session's in-memory cache and pushes
/// one buffer per frame, on the broadcast's shared timeline.
///
/// The network side only ever writes into the track's cache; this thread blocks on the
/// cache (with a timeout) and downstream, never the reverse. What it drops, and why:
/// - a whole group whose start is already past its render deadline while a newer group
///   exists (late groups are skipped at group boundaries, never mid-group);
/// - the groups the latency budget skips before they reach the pad (``TrackConsumer``);
/// - malformed frames (and the rest of their group, which cannot decode without them);
/// - frames repeated by a resubscription after a reconnect.
final class SrcPad: @unchecked Sendable {
    /// What the pad plays: a rendition of a broadcast on a session.
    struct Source: @unchecked Sendable {
        let session: MoqSession
        let broadcast: String
        let rendition: PlayableRendition
        /// Identifies the broadcast's timeline: a new one (a reconnect after a loss, another
        /// broadcast) is a discontinuity. A GOAWAY handover keeps it: the same publisher goes
        /// on, so frames the new subscription repeats are recognised by their position.
        let epoch: UInt64
        /// Play the track to its end (EOS) rather than waiting for the next broadcast.
        let eosOnEnd: Bool
        /// The publisher said its input is not live (a file): long-form plays it from its start.
        var finite = false

        var trackName: String { rendition.rendition.name }
        /// The CMAF track of a `cmaf` rendition (its init segment, checked when the rendition was
        /// found playable); nil for the legacy container.
        var cmafTrack: CMAFTrack? {
            guard case .cmaf(let initSegment) = rendition.rendition.config.container.kind else { return nil }
            return try? CMAFInit(initSegment).tracks.first
        }
        /// The same subscription (catalog metadata such as `jitter` or `bitrate` may change
        /// in every snapshot without touching the track).
        func same(as other: Source) -> Bool {
            session === other.session && epoch == other.epoch && trackName == other.trackName
                && broadcast == other.broadcast
        }
    }

    let pad: UnsafeMutablePointer<GstPad>
    let kind: MediaKind
    let name: String
    let counters: PlaybackCounters
    private weak var src: MoqSrc?
    private let pending = Lock<Source?>(nil)
    private let wake = ConditionSignal()
    private let stopping = Atomic(false)
    private let eosRequested = Atomic(false)

    // Streaming-thread state.
    private var source: Source?
    private var remote: RemoteTrack?
    private var reader: TrackReader?
    private var streamID: String?
    private var capsString: String?
    private var needsSegment = true
    /// The seqnum of the seek the next segment answers.
    private var segmentSeqnum: UInt32?
    private var discont = true
    private var skipToNextGroup = false
    private var readyPosted = false
    /// The last frame pushed: frames at or before it are repeats of a resubscription.
    private var lastPosition: (group: UInt64, index: Int, timestampUs: UInt64)?
    /// A new broadcast epoch began (the broadcast was announced again): whether the last
    /// position still applies is known at its first group. If the timeline continues and that
    /// group is not newer than what was pushed, it is the same publisher (moqsink handing over
    /// to a new session after GOAWAY) repeating itself, and the repeats are skipped; otherwise
    /// (a new timeline, or newer frames of a restarted publisher whose groups count from 0
    /// again) the old position no longer means anything.
    private var positionFromPreviousEpoch = false
    /// Long-form, after a resubscription: the previous reader, played until what it buffered is
    /// gone (it answers nothing at once), then cancelled.
    private var draining: (reader: TrackReader, remote: RemoteTrack)?
    /// The next broadcast of a queue (or prefix follow), subscribed before the current track ends
    /// so that it is prerolled: it plays right after the current track, on a continuous
    /// timeline (``splice(src:)``).
    private var upcoming: (source: Source, remote: RemoteTrack, reader: TrackReader, prerolled: Bool)?
    /// Set when the control queue made the upcoming broadcast the current one: the splice
    /// happens at the current track's end, or at this monotonic time if it never ends.
    private var upcomingDueNs: UInt64?
    private let pendingPrepare = Lock<Source??>(nil)
    /// Set by a seek until its first frame is pushed.
    private var startingAfterSeek = false
    /// The previous frame pushed (running time), for the duration of the last one.
    private var previousPts: (pts: UInt64, epoch: UInt64)?
    private var eosSent = false
    /// The `latency` property: the subscription's budget and the target buffering.
    private var latencyMs: UInt64
    /// The reader's skipping budget: the whole render delay plus the jitter budget, so
    /// that only a reader that has fallen behind what the sinks wait for skips groups.
    private var readerBudgetMs: UInt64
    /// Long-form playback's deep budget (ms): the subscription asks for that much media and its
    /// cache keeps it; every frame is played (none skipped to catch up). Nil when playing live.
    private let longFormBufferMs: UInt64?

    init(
        pad: UnsafeMutablePointer<GstPad>, kind: MediaKind, name: String, src: MoqSrc, latencyMs: UInt64,
        longFormBufferMs: UInt64? = nil
    ) {
        self.pad = pad
        self.kind = kind
        self.name = name
        self.src = src
        self.latencyMs = latencyMs
        self.longFormBufferMs = longFormBufferMs
        self.readerBudgetMs = 2 * latencyMs + (longFormBufferMs ?? 0)
        counters = PlaybackCounters(startedAt: src.startedAt)
    }

    /// The rendition currently (or about to be) played.
    var trackName: String? { pending.withLock { $0 }?.trackName ?? currentTrack.withLock { $0 } }
    private let currentTrack = Lock<String?>(nil)

    /// Plays `source` from the next loop iteration on (the previous subscription ends).
    func play(_ source: Source) {
        pending.withLock { $0 = source }
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    /// Subscribes to `source` (the next broadcast of a queue) while the current track plays, to
    /// splice it in when the current track ends; nil forgets a prepared one.
    func prepare(_ source: Source?) {
        pendingPrepare.withLock { $0 = .some(source) }
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    private let readerRef = Lock<TrackReader?>(nil)
    /// The timestamp (µs) of the last frame handed downstream (0: none yet), for the stats.
    private let lastPushedUs = Atomic<UInt64>(0)

    /// The publisher timestamp (µs) of the last frame handed downstream (0: none yet).
    var lastPushedTimestampUs: UInt64 { lastPushedUs.load(ordering: .relaxed) }

    /// The first cached group starting at or after `timestampUs`, if it arrived (µs).
    func groupStart(atOrAfter timestampUs: UInt64) -> UInt64? {
        readerRef.withLock { $0 }?.groupStart(atOrAfter: timestampUs)?.startUs
    }

    /// How far the newest received frame is ahead of the last one handed downstream (ms), read
    /// now: it keeps growing while the pipeline is paused or the sinks hold the pad.
    var bufferedMs: Double? {
        let pushed = lastPushedUs.load(ordering: .relaxed)
        guard pushed > 0, let edge = readerRef.withLock({ $0?.liveEdgeUs }) else { return nil }
        return edge > pushed ? Double(edge - pushed) / 1000 : 0
    }
    private let latencyRef = Lock<UInt64?>(nil)

    /// A seek within the long-form buffer, handled on the pad's thread (``performSeek(_:src:)``).
    struct SeekRequest: Sendable {
        /// The seek event's seqnum: every pad handles the same seek once.
        let id: UInt64
        /// Where to play from (publisher µs): the start of a video group, so that both pads
        /// begin together and video at a keyframe.
        let targetUs: UInt64
        let seqnum: UInt32
    }
    private let pendingSeek = Lock<SeekRequest?>(nil)

    /// Plays from `request.targetUs` at once: downstream is flushed, the reader moves to the
    /// cached group holding the target, and the shared timeline puts the target right after now.
    func seek(_ request: SeekRequest) {
        pendingSeek.withLock { $0 = request }
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    /// Tags to push before the next buffer (a TAG event is serialized with the data).
    private let pendingTags = Lock<TagListBox?>(nil)

    /// Pushes `list` (copied) downstream before the next buffer.
    func setPendingTags(_ list: UnsafeMutablePointer<GstTagList>) {
        let copy = TagListBox(gst_tag_list_copy(list))
        pendingTags.withLock { $0 = copy }
    }

    /// The newest timestamp received on the pad's track (µs).
    var liveEdgeUs: UInt64? { readerRef.withLock { $0 }?.liveEdgeUs }

    /// The start (µs) of the cached group holding `timestampUs` (see ``TrackReader``).
    func groupStart(atOrBefore timestampUs: UInt64) -> UInt64? {
        readerRef.withLock { $0 }?.groupStart(atOrBefore: timestampUs)?.startUs
    }

    /// The latency budget changed: the subscription and the reader follow from the next group.
    func latencyChanged(ms: UInt64) {
        latencyRef.withLock { $0 = ms }
        wake.signal()
    }

    /// Sets the first source before the task starts (from the control queue), so the
    /// pad's sticky events exist when it is added.
    func prime(_ source: Source) {
        guard let src else { return }
        switchTo(source, src: src)
    }

    /// Ends the stream from the pad's thread (an EOS event sent to the element).
    func requestEOS() {
        eosRequested.store(true, ordering: .releasing)
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    // MARK: Task

    /// Starts the streaming thread.
    func start() {
        stopping.store(false, ordering: .releasing)
        let box = Unmanaged.passRetained(self).toOpaque()
        gst_pad_start_task(
            pad, { data in Unmanaged<SrcPad>.fromOpaque(data!).takeUnretainedValue().iterate() }, box,
            { data in Unmanaged<SrcPad>.fromOpaque(data!).release() })
    }

    /// Stops the streaming thread and ends the subscription (waits for the iteration in progress).
    func stop() {
        stopping.store(true, ordering: .releasing)
        readerRef.withLock { $0?.cancel() }
        wake.signal()
        gst_pad_stop_task(pad)
        draining?.remote.cancel()
        draining = nil
        upcoming?.remote.cancel()
        upcoming = nil
        upcomingDueNs = nil
        heldForSplice = nil
        remote?.cancel()
        remote = nil
        reader = nil
        readerRef.withLock { $0 = nil }
    }

    /// One iteration of the streaming thread: at most one buffer, or a bounded wait.
    private func iterate() {
        guard !stopping.load(ordering: .acquiring), let src else {
            gst_pad_pause_task(pad)
            return
        }
        let generation = wake.current
        if eosRequested.exchange(false, ordering: .acquiring), !eosSent {
            eosSent = true
            gst_pad_push_event(pad, gst_event_new_eos())
            gst_pad_pause_task(pad)
            return
        }
        // A preroll first: a play of the same source that follows it then finds it prepared.
        if let prepared = pendingPrepare.withLock({ p -> Source?? in
            defer { p = nil }; return p
        }) {
            prepareUpcoming(prepared, src: src)
        }
        if let next = pending.withLock({ s -> Source? in
            defer { s = nil }; return s
        }) {
            switchTo(next, src: src)
        }
        if let due = upcomingDueNs, monotonicNow() >= due { splice(src: src) }
        if var next = upcoming, !next.prerolled, next.reader.liveEdgeUs != nil {
            next.prerolled = true
            upcoming = next
            src.events.post(
                "queue.preroll", kind: kind, track: next.source.trackName,
                [("broadcast", .string(next.source.broadcast))])
        }
        if let ms = latencyRef.withLock({ l -> UInt64? in
            defer { l = nil }; return l
        }) {
            latencyMs = ms
            remote?.update(subscriptionRange())
        }
        let budget = src.renderDelayNs / 1_000_000 + latencyMs + (deepBufferMs ?? 0)
        if budget != readerBudgetMs {
            readerBudgetMs = budget
            reader?.updateBudget(maxLatencyMs: budget)
        }
        guard let reader, let source, !eosSent else {
            wake.wait(since: generation, timeoutNs: upcoming == nil ? 100_000_000 : 20_000_000)
            return
        }
        guard let clock = src.playingClock() else {
            // A live source pushes in PLAYING only: the timeline is running time.
            wake.wait(since: generation, timeoutNs: 20_000_000)
            return
        }
        defer { gst_object_unref(clock.clock) }
        if let request = pendingSeek.withLock({ r -> SeekRequest? in
            defer { r = nil }; return r
        }) {
            performSeek(request, reader: reader, source: source, now: clock.runningTime ?? 0, src: src)
            return
        }
        if let held = heldForSplice {
            // Video's first frame of the queue's next broadcast waits for audio to anchor it.
            if waitsForAudioSplice(source, src: src), monotonicNow() &- held.since < Self.spliceHoldNs {
                wake.wait(since: generation, timeoutNs: 5_000_000)
                return
            }
            heldForSplice = nil
            push(held.frame, reader: reader, source: source, now: clock.runningTime ?? 0, src: src)
            return
        }
        if let drain = draining {
            if case .frame(let frame) = drain.reader.next(waitingUpTo: 0) {
                push(frame, reader: drain.reader, source: source, now: clock.runningTime ?? 0, src: src)
                return
            }
            drain.remote.cancel()
            draining = nil
        }
        let item = reader.next(waitingUpTo: 100_000_000)
        counters.setGroupsSkipped(reader.groupsSkipped)
        switch item {
        case .idle:
            if counters.checkStall(now: monotonicNow()) {
                src.events.post(
                    "track.stall.start", kind: kind, track: source.trackName, [("cause", .string("network-idle"))])
                src.events.post("rebuffer.start", kind: kind, track: source.trackName, [])
            }
        case .ended where upcoming != nil:
            // The track finished and the queue's next broadcast is prerolled: it follows at once,
            // without waiting for the unannouncement (which arrives tens of ms later: a gap). A
            // track that finished while its broadcast goes on (a new format under the same name)
            // therefore moves the queue on too. A track that failed (a lost session) does not: the
            // control queue decides (the broadcast ended, or a reconnect).
            splice(src: src)
        case .ended:
            if source.eosOnEnd {
                src.reporter.log(GST_LEVEL_INFO, "\(name): track \(source.trackName) finished: EOS")
                eosSent = true
                gst_pad_push_event(pad, gst_event_new_eos())
            } else {
                dropSubscription()
            }
        case .failed(let error):
            if case .cancelled = error { return }
            // The publisher or the relay went away: a resubscription (reconnect, or the next
            // broadcast) will bring a new source.
            src.reporter.log(GST_LEVEL_INFO, "\(name): track \(source.trackName) ended: \(error)")
            dropSubscription()
        case .malformed(let group, let index, let error):
            counters.dropped()
            skipToNextGroup = true
            src.events.post(
                "decode.error", kind: kind, track: source.trackName,
                [
                    ("message", .string("frame \(index) of group \(group) is not a legacy frame: \(error)")),
                    ("group", .uint64(group)),
                ])
        case .frame(let frame) where waitsForAudioSplice(source, src: src):
            heldForSplice = (frame, monotonicNow())
        case .frame(let frame):
            push(frame, reader: reader, source: source, now: clock.runningTime ?? 0, src: src)
        }
    }

    // MARK: Queue

    /// Video's first frame of a spliced broadcast, held until audio anchors the splice.
    private var heldForSplice: (frame: MediaFrame, since: UInt64)?
    /// How long video waits for audio to end the previous broadcast and anchor the next one.
    static let spliceHoldNs: UInt64 = 500_000_000

    /// Audio decides where the next broadcast of a queue starts: it is what a gap or an overlap
    /// would be heard in. A video pad that spliced first holds its first frame until the audio pad
    /// has pushed the end of the previous broadcast and placed the first frame of the next.
    private func waitsForAudioSplice(_ playing: Source, src: MoqSrc) -> Bool {
        guard kind == .video, src.run?.pads[.audio] != nil else { return false }
        return src.timeline.withLock { $0.awaitingSplice && $0.spliceEpoch == playing.epoch }
    }

    /// How long after the queue moved on the current track may still deliver its last frames.
    static let spliceWaitNs: UInt64 = 1_000_000_000

    private func prepareUpcoming(_ prepared: Source?, src: MoqSrc) {
        if let current = upcoming, let prepared, current.source.same(as: prepared) { return }
        // Already playing it (the queue moved on before its preroll was handled): nothing to prepare.
        if let prepared, let source, source.session === prepared.session, source.broadcast == prepared.broadcast,
            source.trackName == prepared.trackName
        {
            return
        }
        upcoming?.remote.cancel()
        upcoming = nil
        upcomingDueNs = nil
        guard let prepared else { return }
        let (remote, reader, _) = subscribe(prepared, src: src)
        upcoming = (prepared, remote, reader, false)
        src.reporter.log(GST_LEVEL_INFO, "\(name): prerolling \(prepared.broadcast)/\(prepared.trackName)")
    }

    /// Plays the prepared broadcast from here on: its first frame starts where the last frame
    /// pushed (on any pad) ends.
    private func splice(src: MoqSrc) {
        guard let next = upcoming else { return }
        heldForSplice = nil
        upcoming = nil
        upcomingDueNs = nil
        let previous = source
        remote?.cancel()
        draining?.remote.cancel()
        draining = nil
        source = next.source
        remote = next.remote
        reader = next.reader
        readerRef.withLock { $0 = next.reader }
        currentTrack.withLock { $0 = next.source.trackName }
        readyPosted = false
        skipToNextGroup = false
        discont = true
        eosSent = false
        lastPosition = nil
        positionFromPreviousEpoch = false
        counters.resetArrival()
        _ = src.timeline.withLock { $0.splice(epoch: next.source.epoch) }
        startStream(next.source, src: src)
        src.reporter.log(GST_LEVEL_INFO, "\(name): \(previous?.broadcast ?? "-") → \(next.source.broadcast)")
        src.queueAdvanced(to: next.source.broadcast)
        src.events.post(
            "queue.advance", kind: kind, track: next.source.trackName,
            [
                ("broadcast", .string(next.source.broadcast)), ("from", .string(previous?.broadcast ?? "")),
                ("prerolled", .bool(next.prerolled)),
            ])
    }

    /// Flushes downstream, moves the reader and (first pad to get here) the shared timeline.
    private func performSeek(_ request: SeekRequest, reader: TrackReader, source: Source, now: UInt64, src: MoqSrc) {
        let start = gst_event_new_flush_start()!
        gst_event_set_seqnum(start, request.seqnum)
        gst_pad_push_event(pad, start)
        let stop = gst_event_new_flush_stop(0)!
        gst_event_set_seqnum(stop, request.seqnum)
        gst_pad_push_event(pad, stop)
        // Flushing removed the segment (and an EOS): a new one follows.
        needsSegment = true
        segmentSeqnum = request.seqnum
        eosSent = false
        startStream(source, src: src)
        draining?.remote.cancel()
        draining = nil
        let from = reader.seek(toTimestampUs: request.targetUs, dropEarlier: kind != .video)
        lastPosition = nil
        positionFromPreviousEpoch = false
        skipToNextGroup = false
        discont = true
        startingAfterSeek = true
        heldForSplice = nil
        // The target is rendered right after now: its running time is now minus what the sinks
        // wait, plus a margin for decoding.
        let renderDelay = src.renderDelayNs
        let at = now &+ Self.seekMarginNs > renderDelay ? now &+ Self.seekMarginNs - renderDelay : 0
        let moved = src.timeline.withLock { $0.seek(id: request.id, timestampUs: request.targetUs, at: at) }
        src.reporter.log(
            GST_LEVEL_INFO,
            "\(name): seek to \(request.targetUs) µs: reading from \(from.map { "\($0) µs" } ?? "nothing cached")"
                + (moved ? " (timeline moved)" : ""))
    }

    /// How long after a seek its first frame is rendered: time to decode it.
    static let seekMarginNs: UInt64 = 30_000_000

    private func dropSubscription() {
        remote?.cancel()
        remote = nil
        reader = nil
        readerRef.withLock { $0 = nil }
        counters.resetArrival()
    }

    private func subscriptionRange(for playing: Source? = nil) -> SubscriptionRange {
        // Audio first under congestion: it is small and a gap in it is heard. Long-form asks for
        // its whole deep budget: the relay sends what it cached within it at once (faster than
        // real time), then the live groups.
        SubscriptionRange(
            priority: kind == .audio ? 2 : 1, maxLatencyMs: latencyMs + (deepBufferMs(for: playing ?? source) ?? 0))
    }

    /// The deep budget in use (ms): `buffer-duration`, or the whole track for a finite broadcast
    /// (a file: every group is asked for and kept, from its start). Nil when playing live.
    private var deepBufferMs: UInt64? { deepBufferMs(for: source) }

    private func deepBufferMs(for playing: Source?) -> UInt64? {
        guard let longFormBufferMs else { return nil }
        return playing?.finite == true ? Self.wholeTrackMs : longFormBufferMs
    }

    /// A subscription to `next` and its reader, as ``switchTo(_:src:)`` and a queue's preroll make
    /// them. Long-form: the subscription's cache holds the deep buffer (and a margin for the time
    /// frames spend between arriving and being played), and a missing group is waited for as
    /// long as in live playback at most (1 s), not for the whole deep budget (a restarted relay
    /// may announce a start it no longer holds).
    private func subscribe(_ next: Source, src: MoqSrc) -> (RemoteTrack, TrackReader, budgetMs: UInt64) {
        let deep = deepBufferMs(for: next)
        let limits = deep.map { CacheLimits.retaining(ms: $0 + 10_000) } ?? CacheLimits()
        let remote = next.session.subscribe(
            broadcast: next.broadcast, track: next.trackName, range: subscriptionRange(for: next), limits: limits)
        let budget = deep.map { src.renderDelayNs / 1_000_000 + latencyMs + $0 } ?? readerBudgetMs
        let reader = TrackReader(
            track: remote.track, maxLatencyMs: budget,
            reorderWindowMs: longFormBufferMs == nil ? nil : TrackConsumer.defaultReorderWindowMs,
            cmaf: next.cmafTrack)
        return (remote, reader, budget)
    }

    /// A budget that covers any finite broadcast (about 35 years), far below the varint ceiling.
    static let wholeTrackMs: UInt64 = 1 << 40

    private func switchTo(_ next: Source, src: MoqSrc) {
        if let prepared = upcoming?.source, prepared.session === next.session, prepared.broadcast == next.broadcast,
            prepared.trackName == next.trackName
        {
            // The queue moved on: the prepared subscription plays once the current track ends
            // (the broadcast was unannounced; its last frames may still be arriving), at once if
            // it already did.
            upcoming?.source = next
            upcomingDueNs = reader == nil ? monotonicNow() : monotonicNow() &+ Self.spliceWaitNs
            return
        }
        let previous = source
        if let previous, previous.same(as: next), reader != nil {
            // Same track: only its caps may have changed.
            source = next
            if previous.rendition.caps != next.rendition.caps { startStream(next, src: src) }
            return
        }
        if longFormBufferMs != nil, let previous, let oldReader = reader, let oldRemote = remote,
            previous.broadcast == next.broadcast, previous.trackName == next.trackName
        {
            // Long-form, the same track on a new session (a reconnect): what the old subscription
            // buffered is played first; the new one goes on after it (its repeats are dropped).
            draining?.remote.cancel()
            draining = (oldReader, oldRemote)
        } else {
            remote?.cancel()
        }
        source = next
        let (remote, reader, budget) = subscribe(next, src: src)
        readerBudgetMs = budget
        // A source the control queue chose over the queue's next one: that one waits for its turn.
        upcomingDueNs = nil
        self.remote = remote
        self.reader = reader
        readerRef.withLock { $0 = reader }
        source = next
        currentTrack.withLock { $0 = next.trackName }
        readyPosted = false
        skipToNextGroup = false
        discont = draining == nil
        counters.resetArrival()
        if previous?.epoch != next.epoch { positionFromPreviousEpoch = lastPosition != nil }
        if let previous, previous.trackName != next.trackName {
            src.events.post(
                "track.switch", kind: kind, track: next.trackName, [("from", .string(previous.trackName))])
        }
        startStream(next, src: src)
    }

    /// stream-start, caps and segment for a (new) rendition.
    private func startStream(_ source: Source, src: MoqSrc) {
        let id = "\(source.broadcast)/\(source.trackName)"
        let caps: UnsafeMutablePointer<GstCaps>
        do { caps = try MediaFormat.makeCaps(for: source.rendition.rendition.config) } catch {
            src.reporter.warning(.stream(GST_STREAM_ERROR_CODEC_NOT_FOUND), "\(name): \(error)")
            return
        }
        defer { gst_caps_unref(caps) }
        let text = GstSupport.capsString(caps)
        if streamID != id {
            streamID = id
            let start = gst_event_new_stream_start(gst_pad_create_stream_id(pad, src.element, id))!
            gst_event_set_group_id(start, src.groupID)
            if let stream = src.stream(for: source) {
                gst_event_set_stream(start, stream)
                gst_object_unref(stream)
            }
            gst_pad_push_event(pad, start)
            if let collection = src.collection() {
                gst_pad_push_event(pad, gst_event_new_stream_collection(collection))
                gst_object_unref(collection)
            }
            capsString = nil
            needsSegment = true
        }
        if capsString != text {
            capsString = text
            gst_pad_push_event(pad, gst_event_new_caps(caps))
        }
        if needsSegment {
            var segment = GstSegment()
            gst_segment_init(&segment, GST_FORMAT_TIME)
            let event = gst_event_new_segment(&segment)!
            if let seqnum = segmentSeqnum { gst_event_set_seqnum(event, seqnum) }
            gst_pad_push_event(pad, event)
            needsSegment = false
            segmentSeqnum = nil
        }
    }

    // MARK: Buffers

    /// Adaptive latency: how late a frame may be before the margin grows. Video sinks still render
    /// a frame up to 20 ms late (their default `max-lateness`); a late audio frame is a gap.
    private var lateToleranceNs: UInt64 { kind == .video ? 20_000_000 : 0 }

    private func push(_ frame: MediaFrame, reader: TrackReader, source: Source, now: UInt64, src: MoqSrc) {
        // Read before a seek that is about to move the reader: not played.
        if pendingSeek.withLock({ $0 != nil }) { return }
        if let tags = pendingTags.withLock({ t -> TagListBox? in
            defer { t = nil }; return t
        }), let list = tags.take() {
            gst_pad_push_event(pad, gst_event_new_tag(list))
        }
        // Sinks render a buffer at its running time plus the pipeline's latency.
        let latencyNs = src.renderDelayNs
        var placedStart: (pts: UInt64, placement: PlayoutTimeline.Placement)?
        // Live playback anchors and retargets on the live edge (the newest frame received);
        // long-form on the frame itself, so that every frame plays and a late one (an underrun)
        // moves the timeline rather than being skipped.
        let longForm = longFormBufferMs != nil
        counters.liveEdge(reader.liveEdgeUs ?? frame.timestampUs, now: monotonicNow())
        if longForm, let last = lastPosition, frame.timestampUs <= last.timestampUs,
            frame.group < last.group || (frame.group == last.group && frame.index <= last.index)
        {
            // A resubscription asks for the whole deep budget: what it repeats is dropped before
            // it can count as where the timeline is.
            counters.dropped()
            return
        }
        if positionFromPreviousEpoch {
            guard frame.startsGroup else {
                counters.dropped()
                return
            }
            positionFromPreviousEpoch = false
            let edge = longForm ? frame.timestampUs : reader.liveEdgeUs ?? frame.timestampUs
            let placed = src.timeline.withLock {
                $0.place(
                    timestampUs: frame.timestampUs, liveEdgeUs: edge, now: now, latencyNs: latencyNs,
                    epoch: source.epoch, toleranceNs: lateToleranceNs)
            }
            if case .anchored = placed.placement {
                lastPosition = nil
            } else if let last = lastPosition, frame.timestampUs > last.timestampUs {
                lastPosition = nil
            }
            placedStart = placed
        }
        if let last = lastPosition, frame.group < last.group || (frame.group == last.group && frame.index <= last.index)
        {
            // Already pushed before a resubscription.
            counters.dropped()
            return
        }
        if !frame.startsGroup && skipToNextGroup {
            // The rest of a group whose start was dropped (late, or malformed) cannot decode.
            counters.dropped()
            return
        }
        var pts: UInt64
        if frame.startsGroup || longForm {
            skipToNextGroup = false
            let edge = longForm ? frame.timestampUs : reader.liveEdgeUs ?? frame.timestampUs
            let (placed, placement) =
                placedStart
                ?? src.timeline.withLock {
                    $0.place(
                        timestampUs: frame.timestampUs, liveEdgeUs: edge, now: now, latencyNs: latencyNs,
                        epoch: source.epoch, toleranceNs: lateToleranceNs)
                }
            pts = placed
            switch placement {
            case .retargeted(let shift):
                discont = true
                // Nothing was playing yet when a seek's first frame misses its margin: the timeline
                // moves as an anchor would, and no sample was late.
                if !startingAfterSeek {
                    if longForm { counters.underrun() }
                    src.events.post(
                        "rebuffer.end", kind: kind, track: source.trackName,
                        [("added-latency-ms", .double(Double(shift) / 1e6))])
                }
            case .anchored:
                discont = true
            case .continued: break
            }
            let inGrace = src.timeline.withLock { $0.isInLateGrace(now: now) }
            if !longForm, pts &+ latencyNs < now, reader.hasGroup(after: frame.group) || inGrace {
                // Too late to be shown and a newer group is here (or, just after a reconnect on the
                // same timeline, is coming): skip to it.
                reader.skipRestOfGroup()
                counters.dropped()
                discont = true
                return
            }
        } else {
            // A frame at the live edge that is late inside a group grows an adaptive margin at the
            // next group start (older frames of a group joined late are expected to be late).
            let atEdge = !longForm && frame.timestampUs >= reader.liveEdgeUs ?? frame.timestampUs
            pts = src.timeline.withLock { timeline in
                if atEdge {
                    timeline.observe(
                        timestampUs: frame.timestampUs, now: now, latencyNs: latencyNs, toleranceNs: lateToleranceNs,
                        epoch: source.epoch)
                }
                return timeline.runningTime(of: frame.timestampUs, epoch: source.epoch)
            }
        }
        guard let buffer = Self.wrap(frame.payload) else { return }
        swiftmoq_buffer_set_pts(buffer, GstClockTime(pts))
        // The publisher's own timestamp travels with the buffer (decoders keep the meta), so an
        // application can line frames up with data tracks or measure end-to-end latency.
        gst_buffer_add_reference_timestamp_meta(
            buffer, Self.publisherTimeCaps, GstClockTime(Self.nanoseconds(frame.timestampUs)),
            swiftmoq_clock_time_none())
        var flags: UInt32 = 0
        if kind == .video && !frame.startsGroup { flags |= GST_BUFFER_FLAG_DELTA_UNIT.rawValue }
        if discont { flags |= GST_BUFFER_FLAG_DISCONT.rawValue }
        if flags != 0 { swiftmoq_buffer_set_flags(buffer, flags) }
        discont = false
        if !readyPosted {
            readyPosted = true
            src.events.post(
                "track.ready", kind: kind, track: source.trackName,
                [
                    ("source-timestamp-us", .uint64(frame.timestampUs)),
                    ("keyframe", .bool(frame.startsGroup)),
                    ("payload-bytes", .uint64(UInt64(frame.payload.count))),
                    ("target-buffering-ms", .uint64(latencyMs)),
                ])
        }
        let edgePts = src.timeline.withLock {
            $0.runningTime(of: reader.liveEdgeUs ?? frame.timestampUs, epoch: source.epoch)
        }
        let size = frame.payload.count
        lastPushedUs.store(max(1, frame.timestampUs), ordering: .relaxed)
        let result = gst_pad_push(pad, buffer)
        startingAfterSeek = false
        lastPosition = (frame.group, frame.index, frame.timestampUs)
        // The frame lasts until the next one: the previous frame's spacing is its best estimate
        // (a second at most), so that a splice starts right after it.
        var endNs = pts
        if let last = previousPts, last.epoch == source.epoch, pts > last.pts, pts - last.pts <= 1_000_000_000 {
            endNs = pts + (pts - last.pts)
        }
        previousPts = (pts, source.epoch)
        src.timeline.withLock { $0.pushed(pts, endNs: endNs) }
        if let stall = counters.framePushed(
            bytes: size, now: monotonicNow(),
            // Clamping: a publisher's timestamps can put the live edge at the end of time.
            slackNs: Int64(clamping: edgePts &+ latencyNs) &- Int64(clamping: now),
            bufferNs: edgePts > pts ? edgePts - pts : 0)
        {
            src.events.post(
                "track.stall.end", kind: kind, track: source.trackName,
                [("duration-ms", .double(Double(stall) / 1e6))])
        }
        src.firstBufferPushed()
        handle(result, src: src)
    }

    private func handle(_ result: GstFlowReturn, src: MoqSrc) {
        switch result {
        case GST_FLOW_OK, GST_FLOW_NOT_LINKED:
            // Not linked: decodebin may leave a stream unused; keep the timeline going.
            break
        case GST_FLOW_FLUSHING:
            gst_pad_pause_task(pad)
        case GST_FLOW_EOS:
            eosSent = true
            gst_pad_pause_task(pad)
        default:
            let reason = String(cString: gst_flow_get_name(result))
            src.reporter.error(.stream(GST_STREAM_ERROR_FAILED), "\(name): internal data stream error (\(reason))")
            gst_pad_push_event(pad, gst_event_new_eos())
            gst_pad_pause_task(pad)
        }
    }

    /// The reference of the `GstReferenceTimestampMeta` carrying the publisher's timestamp (ns).
    nonisolated(unsafe) static let publisherTimeCaps: UnsafeMutablePointer<GstCaps> = gst_caps_new_empty_simple(
        "timestamp/x-moq-publisher")

    /// A buffer over the frame's bytes without copying them: the buffer keeps them alive.
    /// A publisher's µs timestamp in ns, saturating below GST_CLOCK_TIME_NONE (any varint may arrive).
    static func nanoseconds(_ micros: UInt64) -> UInt64 {
        let (ns, overflow) = micros.multipliedReportingOverflow(by: 1000)
        return overflow ? UInt64(Int64.max) : min(ns, UInt64(Int64.max))
    }

    private static func wrap(_ bytes: Bytes) -> UnsafeMutablePointer<GstBuffer>? {
        guard bytes.count > 0 else { return gst_buffer_new() }
        let box = Unmanaged.passRetained(BytesBox(bytes))
        // `Bytes` storage has a stable address for its lifetime (see MoqWire.Bytes), which the box extends.
        let base = bytes.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress!) }
        return gst_buffer_new_wrapped_full(
            GST_MEMORY_FLAG_READONLY, base, gsize(bytes.count), 0, gsize(bytes.count), box.toOpaque(),
            { data in Unmanaged<BytesBox>.fromOpaque(data!).release() })
    }
}

/// Keeps a frame's bytes alive for as long as GStreamer uses the buffer.
private final class BytesBox: Sendable {
    let bytes: Bytes
    init(_ bytes: Bytes) { self.bytes = bytes }
}

/// The monotonic clock the track caches use (ns).
func monotonicNow() -> UInt64 { SystemClock().now() }

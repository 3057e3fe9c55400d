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

/// One `video_%u` / `audio_%u` pad of `moqsrc`: a GStreamer task that reads its rendition's
/// track from the session's in-memory cache and pushes one buffer per frame. Every timing and drop
/// decision is the playback's ``Playout``: this type only carries its answers to GStreamer
/// (`SrcPad+Frames`), follows the sources the control queue hands it, and prerolls and splices a
/// queue's next broadcast (`SrcPad+Queue`) or seeks (`SrcPad+Seek`).
final class SrcPad: PadTask, @unchecked Sendable {
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
        /// The ladder the rendition is a rung of, when adaptive bitrate chooses (see
        /// `SrcPad+Adaptive`); nil: this rendition plays whatever the path does.
        var ladder: BitrateLadder?

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

    let kind: MediaKind
    let counters: PlaybackCounters
    let playout: Playout
    let lane: LaneID
    /// What other threads ask of the streaming thread, taken under one lock when ``hasMail`` says
    /// something is there (one atomic load per iteration otherwise).
    struct Inbox {
        var play: Source?
        var prepare: Source??
        var seek: SeekRequest?
        var tags: TagListBox?
        var latencyMs: UInt64?
        /// The render delay changed: the reader's budget follows.
        var renderDelayChanged = false
    }
    private let inbox = Lock(Inbox())
    private let hasMail = Atomic(false)
    /// A seek waits in the inbox: frames read before it are not played.
    let seekPending = Atomic(false)
    let currentTrack = Lock<String?>(nil)
    /// The timestamp (µs) of the last frame handed downstream (0: none yet), for the stats.
    let lastPushedUs = Atomic<UInt64>(0)

    // Streaming-thread state.
    var source: Source?
    var remote: RemoteTrack?
    var reader: TrackReader?
    var stream = StreamEvents()
    var readyPosted = false
    /// A frame the playout asked to hold (a join waiting for the live edge, video waiting for
    /// audio to anchor a splice), with the reader it came from.
    var held: (frame: MediaFrame, reader: TrackReader)?
    /// Long-form, after a resubscription: the previous reader, played until what it buffered is
    /// gone (it answers nothing at once), then cancelled.
    var draining: (reader: TrackReader, remote: RemoteTrack)?
    /// The next broadcast of a queue (or prefix follow), subscribed before the current track ends
    /// so that it is prerolled: it plays right after the current track, on a continuous timeline.
    var upcoming: (source: Source, remote: RemoteTrack, reader: TrackReader, prerolled: Bool)?
    /// Set when the control queue made the upcoming broadcast the current one: the splice
    /// happens at the current track's end, or at this monotonic time if it never ends.
    var upcomingDueNs: UInt64?
    /// Set by a seek until its first frame is pushed.
    var startingAfterSeek = false
    /// Adaptive bitrate, while a ladder plays (`SrcPad+Adaptive`).
    var adaptive: Adaptive?
    let adaptiveShared = Lock<AdaptiveSnapshot?>(nil)
    /// How the pad subscribes and reads (its `latency` may change while playing).
    var policy: SubscriptionPolicy
    /// The reader's skipping budget in use (ms).
    var readerBudgetMs: UInt64 = 0

    init(
        pad: UnsafeMutablePointer<GstPad>, kind: MediaKind, name: String, src: MoqSrc, playout: Playout,
        latencyMs: UInt64, longFormBufferMs: UInt64? = nil
    ) {
        self.kind = kind
        self.playout = playout
        lane = playout.register(kind)
        policy = SubscriptionPolicy(kind: kind, latencyMs: latencyMs, longFormBufferMs: longFormBufferMs)
        counters = PlaybackCounters(startedAt: src.startedAt)
        super.init(pad: pad, name: name, src: src)
    }

    /// The rendition currently (or about to be) played.
    var trackName: String? { inbox.withLock { $0.play }?.trackName ?? currentTrack.withLock { $0 } }

    /// Leaves `change` for the streaming thread and wakes it.
    func post(_ change: (inout Inbox) -> Void) {
        inbox.withLock { change(&$0) }
        hasMail.store(true, ordering: .releasing)
        interrupt()
    }

    /// Plays `source` from the next iteration on (the previous subscription ends).
    func play(_ source: Source) { post { $0.play = source } }

    /// Subscribes to `source` (the next broadcast of a queue) while the current track plays, to
    /// splice it in when the current track ends; nil forgets a prepared one.
    func prepare(_ source: Source?) { post { $0.prepare = .some(source) } }

    /// The render delay (the pipeline's latency) changed.
    func renderDelayChanged() { post { $0.renderDelayChanged = true } }

    /// The publisher timestamp (µs) of the last frame handed downstream (0: none yet).
    var lastPushedTimestampUs: UInt64 { lastPushedUs.load(ordering: .relaxed) }

    /// The first cached group starting at or after `timestampUs`, if it arrived (µs).
    func groupStart(atOrAfter timestampUs: UInt64) -> UInt64? {
        readerRef.withLock { $0 }?.groupStart(atOrAfter: timestampUs)?.startUs
    }

    /// The start (µs) of the cached group holding `timestampUs` (see ``TrackReader``).
    func groupStart(atOrBefore timestampUs: UInt64) -> UInt64? {
        readerRef.withLock { $0 }?.groupStart(atOrBefore: timestampUs)?.startUs
    }

    /// The newest timestamp received on the pad's track (µs).
    var liveEdgeUs: UInt64? { readerRef.withLock { $0 }?.liveEdgeUs }

    /// How far the newest received frame is ahead of the last one handed downstream (ms), read
    /// now: it keeps growing while the pipeline is paused or the sinks hold the pad.
    var bufferedMs: Double? {
        let pushed = lastPushedUs.load(ordering: .relaxed)
        guard pushed > 0, let edge = liveEdgeUs else { return nil }
        return edge > pushed ? Double(edge - pushed) / 1000 : 0
    }

    /// Pushes `list` (copied) downstream before the next buffer.
    func setPendingTags(_ list: UnsafeMutablePointer<GstTagList>) {
        let copy = TagListBox(gst_tag_list_copy(list))
        post { $0.tags = copy }
    }

    /// Tags to push before the next buffer (streaming thread).
    var pendingTags: TagListBox?

    /// The latency budget changed: the subscription and the reader follow from the next group.
    func latencyChanged(ms: UInt64) { post { $0.latencyMs = ms } }

    /// Sets the first source before the task starts (from the control queue), so the
    /// pad's sticky events exist when it is added.
    func prime(_ source: Source) {
        guard let src else { return }
        switchTo(source, src: src)
    }

    // MARK: Task

    override func step(_ src: MoqSrc, generation: UInt64) {
        if hasMail.exchange(false, ordering: .acquiring) { readMail(src: src) }
        if let due = upcomingDueNs, monotonicNow() >= due { splice(src: src) }
        notePreroll(src: src)
        adaptiveStep(src: src)
        guard let reader, let source, !eosSent || seekPending.load(ordering: .acquiring) else {
            wake.wait(since: generation, timeoutNs: upcoming == nil ? 100_000_000 : 20_000_000)
            return
        }
        guard let clock = src.playingClock() else {
            // A live source pushes in PLAYING only: the timeline is running time.
            wake.wait(since: generation, timeoutNs: 20_000_000)
            return
        }
        defer { gst_object_unref(clock.clock) }
        // Until the pipeline plays (its sinks prerolled), a join waits: see MoqSrc.pipelinePlays.
        if !src.pipelinePlaying.load(ordering: .relaxed), src.pipelinePlays() { playout.pipelineIsPlaying() }
        let now = PlayoutNow(runningNs: clock.runningTime ?? 0, monotonicNs: monotonicNow())
        if let request = pendingSeekRequest {
            pendingSeekRequest = nil
            seekPending.store(false, ordering: .releasing)
            performSeek(request, reader: reader, source: source, now: now.runningNs, src: src)
            return
        }
        if let held {
            self.held = nil
            handle(held.frame, reader: held.reader, source: source, now: now, src: src, generation: generation)
            return
        }
        if let drain = draining {
            if case .frame(let frame) = drain.reader.next(waitingUpTo: 0) {
                handle(frame, reader: drain.reader, source: source, now: now, src: src, generation: generation)
                return
            }
            drain.remote.cancel()
            draining = nil
        }
        let item = reader.next(waitingUpTo: 100_000_000)
        let skipped = reader.groupsSkipped
        let before = counters.setGroupsSkipped(skipped)
        if skipped > before, src.diagnostics.load(ordering: .relaxed) {
            src.events.post(
                DropReport(
                    stage: .transport, reason: .missingSequence, kind: kind, track: source.trackName,
                    count: skipped - before))
        }
        switch item {
        case .idle:
            playout.observe(lane, edge: reader.edge, now: now)
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
                // Not paused: a seek in a finished long-form broadcast plays it again.
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
            if src.diagnostics.load(ordering: .relaxed) {
                src.events.post(
                    DropReport(
                        stage: .transport, reason: .invalidPayload, kind: kind, track: source.trackName, group: group))
            }
            playout.skipRestOfGroup(lane, group: group)
            src.events.post(
                "decode.error", kind: kind, track: source.trackName,
                [
                    ("message", .string("frame \(index) of group \(group) is not a legacy frame: \(error)")),
                    ("group", .uint64(group)),
                ])
        case .frame(let frame):
            if skipsStaleGroup(frame, reader: reader, src: src) { return }
            if trialTakesOver(before: frame, src: src) != nil {
                // A higher rendition took over at its group boundary: its reader plays from there
                // on (the next iteration), and this frame is not played.
                return
            }
            handle(frame, reader: reader, source: source, now: now, src: src, generation: generation)
        }
    }

    /// A seek taken from the inbox, performed once the pipeline plays.
    var pendingSeekRequest: SeekRequest?

    /// Takes what other threads left: a preroll first (a play of the same source that follows it then
    /// finds it prepared), then a new source, a seek, tags, a new latency or render delay.
    private func readMail(src: MoqSrc) {
        let mail = inbox.withLock { box -> Inbox in
            defer { box = Inbox() }
            return box
        }
        if let prepared = mail.prepare { prepareUpcoming(prepared, src: src) }
        if let next = mail.play { switchTo(next, src: src) }
        if let seek = mail.seek { pendingSeekRequest = seek }
        if let tags = mail.tags { pendingTags = tags }
        if let ms = mail.latencyMs {
            policy.latencyMs = ms
            remote?.update(policy.range(finite: source?.finite ?? false))
        }
        if mail.latencyMs != nil || mail.renderDelayChanged {
            let budget = policy.readerBudgetMs(
                renderDelayMs: playout.renderDelayNs / 1_000_000, finite: source?.finite ?? false)
            if budget != readerBudgetMs {
                readerBudgetMs = budget
                reader?.updateBudget(maxLatencyMs: budget)
            }
        }
    }

    override func stopped() {
        endTrial()
        adaptive = nil
        draining?.remote.cancel()
        draining = nil
        upcoming?.remote.cancel()
        upcoming = nil
        upcomingDueNs = nil
        held = nil
        remote?.cancel()
        remote = nil
        reader = nil
        playout.unregister(lane)
    }
}

/// The monotonic clock the track caches use (ns).
func monotonicNow() -> UInt64 { SystemClock().now() }

// SPDX-License-Identifier: MIT
public import MoqCatalog
public import MoqSession
import MoqSync
public import MoqWire
import Synchronization

/// A media frame of a hang track (legacy container), ready to become a buffer.
public struct MediaFrame: Sendable, Equatable {
    /// The presentation timestamp in µs, on the publisher's media clock.
    public var timestampUs: UInt64
    /// The codec bytes (a view into the received frame: no copy).
    public var payload: Bytes
    /// The group's sequence.
    public var group: UInt64
    /// The frame's index in its group: 0 starts a group (a keyframe for video).
    public var index: Int
    /// The moment it was read, on the track's clock (ns).
    public var readAt: UInt64
    /// When it arrived (the track's clock), when the reader could tell: it was the newest frame of
    /// its group when read (always for audio, one frame per group).
    public var arrivalNs: UInt64? = nil

    /// True for the first frame of a group.
    public var startsGroup: Bool { index == 0 }
}

/// Reads one received track frame by frame on a plain thread (a GStreamer pad task),
/// blocking with a timeout instead of awaiting: groups in sequence order within the
/// latency budget (``TrackConsumer``), hang's empty end-of-group frames skipped,
/// malformed legacy frames reported rather than thrown.
///
/// `@unchecked Sendable`: reading is confined to one thread at a time (the pad's task);
/// ``cancel()`` and the observer's wake-ups are thread-safe.
public final class TrackReader: @unchecked Sendable {
    /// What a read produced.
    public enum Item: Sendable {
        /// The next frame.
        case frame(MediaFrame)
        /// A frame whose container (legacy or CMAF) could not be decoded (skipped); the error says why.
        case malformed(group: UInt64, index: Int, String)
        /// Nothing arrived within the wait.
        case idle
        /// The track finished cleanly.
        case ended
        /// The track failed or the reader was cancelled.
        case failed(TrackReadError)
    }

    /// The track read.
    public let track: TrackProducer
    private var consumer: TrackConsumer
    private var pendingBudget: UInt64??
    private var lastGroup: UInt64?
    private var skippedBase: UInt64 = 0
    private var groupProgress: UInt64 = 0
    private let skippedTotal = Atomic<UInt64>(0)
    private let signal = ConditionSignal()
    private let wakeup: Wakeup
    private let token: UInt64
    private let cancelled = Atomic(false)
    private var group: GroupConsumer?
    private var index = 0
    private let reorderWindowMs: UInt64?
    private let raw: Bool
    /// The track of a `cmaf` rendition: each frame is a moof+mdat whose samples become frames.
    private let cmaf: CMAFTrack?
    /// Where each CMAF track's previous fragment ended (for fragments without `tfdt`).
    private var cmafDecodeTimes: [UInt32: UInt64] = [:]
    /// Samples of the last CMAF fragment not handed out yet, from ``pendingIndex`` on.
    private var pendingSamples: [MediaFrame] = []
    private var pendingIndex = 0
    /// The newest CMAF fragment's last timestamp, by (group, frame count): ``liveEdgeUs`` is read for
    /// every buffer and from other threads, and a fragment may hold thousands of samples.
    private let edgeCache = Lock<(group: UInt64, count: Int, us: UInt64?)?>(nil)
    /// The index of the next sample within its group (CMAF: a fragment may hold several).
    private var sampleIndex = 0

    /// - Parameters:
    ///   - maxLatencyMs: the budget: groups older than the newest by more are skipped.
    ///   - reorderWindowMs: how long a missing or stalled group is waited for once a later one
    ///     arrived (nil: the budget). A long-form player's deep budget is no reason to wait that
    ///     long for a group that is not coming.
    ///   - raw: the frames are not hang's legacy container (a data track): each is handed over as
    ///     it came, with the frame's own timestamp (the track's timescale).
    ///   - cmaf: the rendition's CMAF track (its `container.init`): frames are fragments, and
    ///     each of their samples is handed over with its presentation time.
    public init(
        track: TrackProducer, maxLatencyMs: UInt64?, reorderWindowMs: UInt64? = nil, raw: Bool = false,
        cmaf: CMAFTrack? = nil
    ) {
        self.track = track
        self.reorderWindowMs = reorderWindowMs
        self.raw = raw
        self.cmaf = cmaf
        consumer = TrackConsumer(track: track, maxLatencyMs: maxLatencyMs, reorderWindowMs: reorderWindowMs)
        wakeup = Wakeup(signal)
        token = track.addObserver(wakeup)
    }

    deinit {
        track.removeObserver(token)
    }

    /// Groups skipped because they were older than the budget, or missing.
    public var groupsSkipped: UInt64 { skippedTotal.load(ordering: .relaxed) }

    /// Wakes a blocked ``next(waitingUpTo:)`` and makes every later read fail with `.cancelled`.
    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        signal.signal()
    }

    /// Changes the latency budget from the next group on (reader thread only).
    public func updateBudget(maxLatencyMs: UInt64?) {
        pendingBudget = .some(maxLatencyMs)
    }

    /// Wakes a blocked read without cancelling it (it returns `.idle`).
    public func interrupt() { signal.signal() }

    /// Abandons the rest of the current group: the next read starts the next group.
    public func skipRestOfGroup() {
        group = nil
        dropPendingSamples()
    }

    /// The start (µs) of the cached group that holds `timestampUs`: the newest group starting at or
    /// before it, or the oldest cached group when every group starts after it. Nil when nothing
    /// is cached. Thread-safe (reads only the track's cache).
    public func groupStart(atOrBefore timestampUs: UInt64) -> (sequence: UInt64, startUs: UInt64)? {
        var chosen: (sequence: UInt64, startUs: UInt64)?
        for group in track.groups(from: 0) {
            guard let first = track.frames(of: group, from: 0).frames.first,
                let start = self.frameTimestampUs(first, last: false)
            else { continue }
            if chosen == nil || start <= timestampUs { chosen = (group.sequence, start) }
            if start > timestampUs { break }
        }
        return chosen
    }

    /// How long the track's groups last (µs): between the starts of the two newest cached groups
    /// that follow each other, or nil when fewer are cached. Thread-safe (reads only the cache).
    public var groupDurationUs: UInt64? {
        var starts: [(sequence: UInt64, us: UInt64)] = []
        for group in track.groups(from: 0).suffix(4) {
            guard let first = track.frames(of: group, from: 0).frames.first,
                let start = self.frameTimestampUs(first, last: false)
            else { continue }
            starts.append((group.sequence, start))
        }
        for (a, b) in zip(starts, starts.dropFirst()).reversed() where b.sequence == a.sequence &+ 1 && b.us > a.us {
            return b.us - a.us
        }
        return nil
    }

    /// The cached groups still arriving that started before `timestampUs` (µs), oldest first.
    /// Thread-safe (reads only the track's cache).
    public func openGroups(startedBefore timestampUs: UInt64) -> [UInt64] {
        track.groups(from: 0).suffix(4).compactMap { group in
            let (frames, status) = track.frames(of: group, from: 0)
            guard status == .open, let first = frames.first,
                let start = self.frameTimestampUs(first, last: false), start < timestampUs
            else { return nil }
            return group.sequence
        }
    }

    /// The first cached group that starts at or after `timestampUs` (µs), if one arrived.
    /// Thread-safe (reads only the track's cache).
    public func groupStart(atOrAfter timestampUs: UInt64) -> (sequence: UInt64, startUs: UInt64)? {
        for group in track.groups(from: 0) {
            guard let first = track.frames(of: group, from: 0).frames.first,
                let start = self.frameTimestampUs(first, last: false)
            else { continue }
            if start >= timestampUs { return (group.sequence, start) }
        }
        return nil
    }

    /// Moves the reader to the cached group that holds `timestampUs` (reader thread only): the
    /// next read starts that group. With `dropEarlier`, frames of it before `timestampUs` are
    /// skipped too (audio, where every frame decodes alone). Returns where reading starts (µs), or
    /// nil when nothing is cached (the reader is left as it was).
    @discardableResult
    public func seek(toTimestampUs timestampUs: UInt64, dropEarlier: Bool) -> UInt64? {
        guard let start = groupStart(atOrBefore: timestampUs) else { return nil }
        skippedBase = VarInt.saturatingAdd(skippedBase, consumer.groupsSkipped)
        let budget = pendingBudget ?? consumer.maxLatencyMs
        pendingBudget = nil
        consumer = TrackConsumer(
            track: track, startAt: start.sequence, maxLatencyMs: budget, reorderWindowMs: reorderWindowMs)
        group = nil
        dropPendingSamples()
        lastGroup = start.sequence > 0 ? start.sequence - 1 : nil
        dropBeforeUs = dropEarlier && timestampUs > start.startUs ? timestampUs : nil
        return dropBeforeUs ?? start.startUs
    }

    /// Set by ``seek(toTimestampUs:dropEarlier:)``: frames before it are skipped, until one at or
    /// after it is read.
    private var dropBeforeUs: UInt64?

    /// Reads the next frame, blocking up to `timeoutNs` for one to arrive.
    public func next(waitingUpTo timeoutNs: UInt64) -> Item {
        let clock = track.clock
        let deadline = clock.now() &+ timeoutNs
        while true {
            if cancelled.load(ordering: .acquiring) { return .failed(.cancelled) }
            let generation = signal.current
            var waitUntil: UInt64? = nil
            if pendingIndex < pendingSamples.count {
                let media = pendingSamples[pendingIndex]
                pendingIndex += 1
                if let before = dropBeforeUs, media.timestampUs < before { continue }
                dropBeforeUs = nil
                return .frame(media)
            }
            if let current = group {
                let (polled, arrival) = current.pollWithArrival()
                switch polled {
                case .frame(let frame):
                    groupProgress = clock.now()
                    let i = index
                    index += 1
                    switch decode(frame, group: current.sequence, index: i, arrivalNs: arrival) {
                    case .some(.frame(let media)) where dropBeforeUs.map({ media.timestampUs < $0 }) ?? false:
                        continue  // before a seek's target
                    case .some(let item):
                        if case .frame = item { dropBeforeUs = nil }
                        return item
                    case .none: continue  // an end-of-group frame
                    }
                case .ended:
                    group = nil
                    continue
                case .wait:
                    // A track that ended leaves no group open.
                    if track.end != nil {
                        group = nil
                        continue
                    }
                    // A stalled group is abandoned for a newer one once it has made no progress
                    // for the budget (or the reorder window without one).
                    if hasGroup(after: current.sequence) {
                        let window =
                            (reorderWindowMs ?? consumer.maxLatencyMs ?? TrackConsumer.defaultReorderWindowMs)
                            &* 1_000_000
                        let due = groupProgress &+ window
                        if clock.now() >= due {
                            group = nil
                            skippedBase &+= 1
                            continue
                        }
                        waitUntil = due
                    }
                }
            } else {
                if let budget = pendingBudget {
                    pendingBudget = nil
                    skippedBase = VarInt.saturatingAdd(skippedBase, consumer.groupsSkipped)
                    consumer = TrackConsumer(
                        track: track, startAt: lastGroup.map { $0 + 1 }, maxLatencyMs: budget,
                        reorderWindowMs: reorderWindowMs)
                }
                let polled = consumer.poll()
                skippedTotal.store(VarInt.saturatingAdd(skippedBase, consumer.groupsSkipped), ordering: .relaxed)
                switch polled {
                case .group(let g):
                    group = g
                    groupProgress = clock.now()
                    lastGroup = g.sequence
                    index = 0
                    sampleIndex = 0
                    continue
                case .ended: return .ended
                case .failed(let error): return .failed(error)
                case .wait(_, let due): waitUntil = due
                }
            }
            let now = clock.now()
            if now >= deadline { return .idle }
            var limit = deadline - now
            if let waitUntil { limit = min(limit, waitUntil > now ? waitUntil - now : 0) }
            if limit > 0 { signal.wait(since: generation, timeoutNs: limit) }
            if cancelled.load(ordering: .acquiring) { return .failed(.cancelled) }
            if clock.now() >= deadline, signal.current == generation { return .idle }
        }
    }

    private func decode(_ frame: Frame, group: UInt64, index: Int, arrivalNs: UInt64?) -> Item? {
        if let cmaf { return decodeFragment(frame, track: cmaf, group: group, index: index) }
        if raw {
            return .frame(
                MediaFrame(
                    timestampUs: frame.timestamp, payload: frame.payload, group: group, index: index,
                    readAt: track.clock.now(), arrivalNs: arrivalNs))
        }
        do {
            let legacy = try LegacyFrame(decoding: frame.payload)
            if legacy.isEndOfGroup { return nil }
            return .frame(
                MediaFrame(
                    timestampUs: legacy.timestamp, payload: legacy.payload, group: group, index: index,
                    readAt: track.clock.now(), arrivalNs: arrivalNs))
        } catch {
            return .malformed(group: group, index: index, error.description)
        }
    }

    /// A CMAF frame: its samples of this track, the first returned and the rest kept for the
    /// next reads. Nil when it holds none.
    private func decodeFragment(_ frame: Frame, track cmaf: CMAFTrack, group: UInt64, index: Int) -> Item? {
        let samples: [CMAFSample]
        do {
            samples = try CMAFFragment.samples(in: frame.payload, tracks: [cmaf], nextDecodeTime: &cmafDecodeTimes)
        } catch {
            return .malformed(group: group, index: index, error.description)
        }
        let now = track.clock.now()
        pendingSamples.removeAll(keepingCapacity: true)
        pendingIndex = 0
        for sample in samples {
            pendingSamples.append(
                MediaFrame(
                    timestampUs: sample.presentationMicros(timescale: cmaf.timescale), payload: sample.data,
                    group: group, index: sampleIndex, readAt: now))
            sampleIndex += 1
        }
        guard !pendingSamples.isEmpty else { return nil }
        pendingIndex = 1
        return .frame(pendingSamples[0])
    }

    /// Forgets the samples of a CMAF fragment not handed out yet (a seek, a skipped group).
    private func dropPendingSamples() {
        pendingSamples.removeAll(keepingCapacity: true)
        pendingIndex = 0
        cmafDecodeTimes.removeAll()
    }

    /// The newest timestamp received on the track (µs), from the last frame of its newest
    /// group: where the live edge is, for anchoring and lateness.
    public var liveEdgeUs: UInt64? { edge?.timestampUs }

    /// The newest frame received on the track: its timestamp, when it arrived, which it is.
    /// Thread-safe (one lock on the track; a CMAF fragment's timestamps are cached).
    public var edge: EdgeSample? {
        guard let newest = track.newestFrame else { return nil }
        let us: UInt64?
        if cmaf == nil {
            us = frameTimestampUs(newest.frame, last: true)
        } else if let cached = edgeCache.withLock({ $0 }), cached.group == newest.group.sequence,
            cached.count == newest.count
        {
            us = cached.us
        } else {
            us = frameTimestampUs(newest.frame, last: true)
            edgeCache.withLock { $0 = (newest.group.sequence, newest.count, us) }
        }
        guard let us else { return nil }
        return EdgeSample(
            timestampUs: us, arrivalNs: newest.arrivalNs, group: newest.group.sequence, count: newest.count)
    }

    /// What the playout needs to know about the track when it decides a frame of `group`.
    public func view(after group: UInt64) -> LaneView {
        let edge = self.edge
        return LaneView(edge: edge, hasNewerGroup: edge.map { $0.group > group } ?? hasGroup(after: group))
    }

    /// The media timestamp (µs) of a received frame: the legacy container's, or the first (or
    /// last) sample's presentation time of a CMAF fragment. Nil when it does not decode.
    /// Thread-safe (keeps no state).
    private func frameTimestampUs(_ frame: Frame, last: Bool) -> UInt64? {
        guard let cmaf else { return try? LegacyFrame(decoding: frame.payload).timestamp }
        var decodeTimes: [UInt32: UInt64] = [:]
        let samples = try? CMAFFragment.samples(in: frame.payload, tracks: [cmaf], nextDecodeTime: &decodeTimes)
        return (last ? samples?.last : samples?.first)?.presentationMicros(timescale: cmaf.timescale)
    }

    /// True when a group newer than `sequence` has arrived.
    public func hasGroup(after sequence: UInt64) -> Bool {
        (track.latestSequence ?? 0) > sequence
    }
}

/// Signals the reader's condition when the track changes.
private final class Wakeup: TrackObserver {
    let signal: ConditionSignal
    init(_ signal: ConditionSignal) { self.signal = signal }
    func trackDidChange() { signal.signal() }
}

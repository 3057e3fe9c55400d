// SPDX-License-Identifier: MIT
import MoqSync
import MoqWire

/// A subscription the peer holds on one of our tracks.
///
/// We resolve its start from the cache and its latency budget (SUBSCRIBE_START), then
/// send one uni stream per group. A subscriber slower than the publisher is met with
/// back-pressure, never with the end of its session: a group stream is opened only
/// when the connection has taken what the subscription already queued (its unsent
/// bytes are below ``SessionLimits/subscriptionSendWindow`` and the session's below
/// ``SessionLimits/maxUnsentBytes``), the newest group first (moq-lite's priority: the
/// live edge never waits behind a backlog), then the rest from the oldest up
/// (``nextQueuedIndex()``). Groups that wait become older; the ones that fall out of the
/// subscriber's budget (or out of the cache) before their stream opens are dropped with
/// SUBSCRIBE_DROP, in runs, and counted: a moq-rs subscriber never sees an error for
/// them. Only a group already in flight that is still stuck behind the budget is reset
/// (OLD).
final class ServedSubscription: StreamHandler, Pumpable {
    /// One group being sent on its own stream.
    final class GroupSend {
        let group: GroupState
        var stream: Int64?
        var nextFrame: Int
        var lastTimestamp: UInt64 = 0
        let frameEnd: UInt64?
        /// Bytes written to the stream so far (to tell whether any of it left).
        var bytesWritten = 0
        /// Reset, cancelled or sent as a datagram: nothing more is written.
        var isClosed = false
        /// The whole group (and FIN) was written; it may still be queued in the transport.
        var finWritten = false

        init(group: GroupState, frameStart: UInt64, frameEnd: UInt64?) {
            self.group = group
            // frame_start is a varint (≤ 2^62 − 1): it fits in a 64-bit Int.
            nextFrame = Int(clamping: frameStart)
            self.frameEnd = frameEnd
        }
    }

    let session: HandlerContext
    let stream: Int64
    var buffer: StreamBuffer
    var bufferedBytes: Int { buffer.buffered }
    var subscribe: Subscribe?
    var track: TrackProducer?
    /// The lowest sequence served, once resolved (SUBSCRIBE_START, or lower for a relayed track).
    var floor: UInt64?
    /// Sequences queued, started or dropped; every sequence below its watermark is.
    var handled = SequenceSet()
    /// Groups admitted but not started yet (waiting for room), by ascending sequence.
    var queue: [GroupState] = []
    var active: [GroupSend] = []
    /// The highest sequence for which a stream was opened (END never goes at or below it).
    var highestStarted: UInt64?
    /// Set while ``startQueued(range:)`` runs: a group stream that opens at once completes inside
    /// it, and leaves the rest of the queue to that loop.
    var startingQueued = false
    var drops = DropRuns()
    /// A pending re-check while written groups still wait in the transport.
    var recheck: (any Cancellable)?
    /// How soon a backed-up subscription looks at the transport again when nothing else wakes
    /// it: 20 ms, doubling up to 1 s while nothing moves (a peer that stopped reading costs
    /// one look a second, not fifty).
    var recheckDelay = ServedSubscription.drainPoll
    static let drainPoll = Duration.milliseconds(20)
    static let maxDrainPoll = Duration.seconds(1)
    /// What the last look saw: whether the next one backs off.
    var lastProgress: (active: Int, queued: Int, unsent: Int) = (0, 0, 0)
    /// Where the subscription stands; one value instead of flags that could disagree.
    enum Phase {
        /// Waiting for SUBSCRIBE (or refusing it).
        case requested
        /// Serving a track.
        case serving
        /// END written (every group below it written in full; the transport may still be sending them).
        case ended
        /// Finished, reset or the session closed: nothing more happens.
        case done
    }
    var phase = Phase.requested
    /// The subscription's slot under ``SessionLimits/maxServedSubscriptions`` and its track observer.
    var served = ServedRequest(.subscription)
    var done: Bool { phase == .done }

    init(session: HandlerContext, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        self.buffer = buffer
    }

    /// The subscriber's priority (for the order in which waiting subscriptions get room).
    var priority: UInt8 { subscribe?.range.priority ?? 0 }
    /// The subscriber's id.
    var subscribeID: UInt64 { subscribe?.id ?? .max }

    // MARK: Requests from the peer

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        buffer.append(data)
        do {
            if subscribe == nil {
                guard let request = try buffer.next(Subscribe.self) else {
                    if fin { finishByPeer() }
                    return
                }
                begin(request)
                guard !done else { return }
            }
            // Every complete update first, then one pump (a burst of updates costs one pass).
            var latest: SubscriptionRange?
            while let update = try buffer.next(SubscribeUpdate.self) { latest = update.range }
            if let latest { apply(latest) }
            if fin { finishByPeer() }
        } catch {
            session.counters.malformedStreams += 1
            end(resetWith: .malformedTrack)
        }
    }

    func peerReset(wireCode: UInt64) { peerCancelled() }

    func peerStopSending(wireCode: UInt64) {
        // A raw (unmapped) code is the Rust stack dropping a receive half: noise.
        guard StreamErrorCode(wireValue: wireCode) != nil else { return }
        peerCancelled()
    }

    /// The subscriber reset or stopped the subscribe stream. After END that is how a
    /// Rust subscriber says goodbye (groups already written in full are left to the
    /// transport); before it, an unsubscribe (nothing more is sent).
    func peerCancelled() {
        guard !done else { return }
        if phase == .ended { return finishByPeer() }
        end(resetWith: .cancel)
    }

    func finishByPeer() {
        // The subscriber ended the subscription gracefully (the Rust subscriber does so
        // once it has END): groups still being written stop, but groups already
        // written in full are left to the transport to deliver.
        guard !done else { return }
        for send in active where !send.finWritten { cancel(send, code: .cancel) }
        active = []
        queue = []
        if phase == .ended { session.counters.servedSubscriptionsCompleted += 1 }
        if !session.isClosed { session.finish(stream) }
        cleanup()
    }

    func begin(_ request: Subscribe) {
        subscribe = request
        session.setSendOrder(stream, SendOrder.control)
        guard served.admit(session) else { return end(resetWith: .internal) }
        guard let origin = session.publishOrigin, let broadcast = origin.broadcast(request.broadcast) else {
            session.counters.refusedRequests += 1
            return end(resetWith: .unroutable)
        }
        guard let track = broadcast.track(request.track) else {
            session.counters.refusedRequests += 1
            return end(resetWith: .notFound)
        }
        phase = .serving
        self.track = track
        track.demand(request.range)
        served.observe(track, pumping: self, on: session)
        pump()
    }

    func apply(_ range: SubscriptionRange) {
        guard var request = subscribe else { return }
        request.range = range
        subscribe = request
        track?.demand(range)
        for send in active {
            if let s = send.stream {
                session.setSendOrder(s, order(for: send.group.sequence))
            }
        }
        pump()
    }

    /// Groups waiting for a stream (back-pressure).
    var pendingGroups: Int { queue.count }

    /// How long a subscription to a relayed track waits for the upstream's START once a group is
    /// there (ns).
    static let upstreamStartWaitNs: UInt64 = 250_000_000
    var startRecheck: (any Cancellable)?
    var awaitingUpstreamStartSince: UInt64?

    // MARK: Sending

    func pump() {
        guard !done, let request = subscribe, let track else { return }
        let range = request.range
        if case .aborted(let code)? = track.end {
            // The publisher's side went away: subscribers see INTERNAL, as from moq-relay.
            return end(resetWith: code == .cancel || code == .sessionClosed ? .internal : code)
        }
        if floor == nil {
            // A relayed track whose upstream START is still on its way: the upstream's groups travel
            // on streams of their own and can overtake it, and starting at the first one to arrive
            // would skip the upstream's first group for good. Wait for START a moment.
            if track.latestGroup != nil, track.subscriptionStart.awaiting {
                // Measured on the session's clock, which its timers run on.
                let now = session.scheduler.clock.now()
                let since = awaitingUpstreamStartSince ?? now
                awaitingUpstreamStartSince = since
                let due = since &+ Self.upstreamStartWaitNs
                if now < due {
                    if startRecheck == nil {
                        let box = WeakReference(self)
                        startRecheck = session.scheduler.schedule(after: .nanoseconds(Int64(due - now))) {
                            box.value?.startRecheck = nil
                            box.value?.pump()
                        }
                    }
                    return
                }
            }
            if let due = upstreamBacklogDue(track), !waitUntil(due) { return }
            guard let start = resolveStart(track: track, range: range) else {
                return finishIfEnded(track)
            }
            // A relayed track's groups can arrive out of order: older groups of the upstream
            // subscription that show up later are still sent (within budget), so the subscription
            // starts right after the newest cached group judged too old, where groups that have
            // not arrived yet may still come. Without such a group, the upstream's backlog has
            // been waited for (``upstreamBacklogDue(_:)``) and what is missing below the start is
            // not coming: saying START at the upstream's first group would have the subscriber
            // wait for it (a long-form player joining a deep upstream subscription waited 1 s).
            var lowest = start
            if let upstreamStart = track.subscriptionStart.sequence, upstreamStart < start,
                upstreamStart >= range.groupStart,
                let stale = track.groups(from: upstreamStart).last(where: { $0.sequence < start })
            {
                lowest = stale.sequence + 1
            }
            writeControl(SubscribeResponse.start(group: lowest).encoded())
            floor = lowest
            handled.raiseWatermark(to: lowest)
        }
        let snapshot = track.snapshot(from: handled.watermark)
        admit(snapshot, track: track, range: range)
        dropStale(snapshot, range: range)
        dropGaps(snapshot, range: range)
        flushDrops()
        guard !done else { return }
        startQueued(range: range)
        for send in active { flush(send, track: track) }
        prune()
        expireStaleGroups(snapshot, range: range)
        guard !done else { return }
        finishIfEnded(track)
    }

    /// When to resolve the start of a relayed track whose young upstream subscription is still
    /// delivering its backlog (nil: now). The backlog arrives newest first (moq-lite's priority),
    /// so resolving at once would judge the start on the newest groups only and say START at the
    /// upstream's first group, which may be older than this subscriber's budget: the subscriber
    /// would wait for groups that are then dropped (a long-form player joining waited 1 s). The
    /// wait ends when the upstream's first group is here, 250 ms after the last older group
    /// arrived, or 1 s after the first look, whichever comes first.
    func upstreamBacklogDue(_ track: TrackProducer) -> UInt64? {
        guard let upstreamStart = track.subscriptionStart.sequence, track.group(sequence: upstreamStart) == nil,
            let oldest = track.groups(from: upstreamStart).first, oldest.sequence > upstreamStart
        else { return nil }
        let now = track.clock.now()
        let since = backlogWaitSince ?? now
        backlogWaitSince = since
        let due = min(oldest.createdAt &+ Self.upstreamStartWaitNs, since &+ Self.upstreamBacklogWaitNs)
        return now < due ? due : nil
    }

    /// Schedules a pump at `due` (on the track's clock); false while it is in the future.
    private func waitUntil(_ due: UInt64) -> Bool {
        guard let track else { return true }
        let now = track.clock.now()
        guard now < due else { return true }
        if startRecheck == nil {
            let box = WeakReference(self)
            startRecheck = session.scheduler.schedule(after: .nanoseconds(Int64(clamping: due - now))) {
                box.value?.startRecheck = nil
                box.value?.pump()
            }
        }
        return false
    }

    var backlogWaitSince: UInt64?
    static let upstreamBacklogWaitNs: UInt64 = 1_000_000_000

    /// The subscriber's budget in ns (saturating: any varint may arrive).
    func budget(_ range: SubscriptionRange) -> UInt64 {
        let (ns, overflow) = range.maxLatencyMs.multipliedReportingOverflow(by: 1_000_000)
        return overflow ? .max : ns
    }

    /// The oldest cached group (at or after the floor) within the latency budget of
    /// the newest; the newest itself when the budget is 0; nil while the track is empty.
    func resolveStart(track: TrackProducer, range: SubscriptionRange) -> UInt64? {
        guard let newest = track.latestGroup else { return nil }
        if let end = range.groupEnd, range.groupStart > end { return range.groupStart }
        let budget = budget(range)
        let candidates = track.groups(from: range.groupStart)
        for g in candidates where newest.age(of: g) <= budget || g === newest {
            return g.sequence
        }
        return max(newest.sequence, range.groupStart)
    }

    /// Queues every cached group at or above the watermark that is not handled yet;
    /// groups the publisher declared undeliverable (empty aborted placeholders) are dropped.
    func admit(_ snapshot: TrackProducer.Snapshot, track: TrackProducer, range: SubscriptionRange) {
        for g in snapshot.groups where !handled.contains(g.sequence) {
            if let end = range.groupEnd, g.sequence > end { break }
            handled.insert(g.sequence...g.sequence)
            if isPlaceholder(g, track: track) {
                drops.add(g.sequence, code: .old)
                continue
            }
            enqueue(g)
        }
    }

    func isPlaceholder(_ group: GroupState, track: TrackProducer) -> Bool {
        if case .aborted = track.frames(of: group, from: 0).status { return track.frameCount(of: group) == 0 }
        return false
    }

    /// Inserts by sequence: late groups of a relayed track can be older than queued ones.
    func enqueue(_ group: GroupState) {
        if let last = queue.last, last.sequence > group.sequence {
            let i = queue.firstIndex { $0.sequence > group.sequence } ?? queue.count
            queue.insert(group, at: i)
        } else {
            queue.append(group)
        }
    }

    /// Queued groups that fell out of the budget (relative to the newest group) or out of
    /// the cache are dropped before any stream is opened for them.
    func dropStale(_ snapshot: TrackProducer.Snapshot, range: SubscriptionRange) {
        guard !queue.isEmpty, let newest = snapshot.latest else { return }
        let budget = budget(range)
        let live = snapshot.end == nil
        queue.removeAll { g in
            if !g.isCached && g !== newest {
                drops.add(g.sequence, code: .evicted)
                session.counters.groupsDroppedForBudget += 1
                return true
            }
            if live && g !== newest && newest.staleness(of: g) > budget {
                drops.add(g.sequence, code: .old)
                session.counters.groupsDroppedForBudget += 1
                return true
            }
            return false
        }
    }

    /// Sequences missing from the cache below a group that is itself stale (or after the
    /// track ended) will never be worth sending: say so, and move the watermark past them.
    func dropGaps(_ snapshot: TrackProducer.Snapshot, range: SubscriptionRange) {
        guard let newest = snapshot.latest else { return }
        let budget = budget(range)
        for g in snapshot.groups where g.sequence > handled.watermark {
            guard newest.age(of: g) > budget || snapshot.end != nil else { break }
            // Every unhandled sequence below g is a gap (no cached group): drop them, run by run.
            while handled.watermark < g.sequence {
                let w = handled.watermark
                let nextHandled = handled.ranges.first?.lowerBound ?? g.sequence
                let gapEnd = min(nextHandled, g.sequence) - 1  // > w: w itself is never handled
                drops.add(range: w...gapEnd, code: .old)
                handled.insert(w...gapEnd)
            }
        }
    }

    func finishIfEnded(_ track: TrackProducer?) {
        guard !done, let track, case .finished(var end)? = track.end else { return }
        // END is exclusive and never at or below a group we sent.
        if let highest = highestStarted { end = max(end, VarInt.saturatingAdd(highest, 1)) }
        if floor != nil, handled.watermark < end {
            // Groups still cached will be admitted by the next pump; the rest are gone.
            guard track.groups(from: handled.watermark).allSatisfy({ handled.contains($0.sequence) }) else { return }
            // Whatever below the end was never handled will not be: say so, in runs.
            var runStart: UInt64?
            var seq = handled.watermark
            var steps = 0
            while seq < end {
                if handled.contains(seq) {
                    if let r = runStart { drops.add(range: r...(seq - 1), code: .old) }
                    runStart = nil
                } else if runStart == nil {
                    runStart = seq
                }
                steps += 1
                if steps > 100_000 {
                    // A sparse range this long is not worth walking: the rest goes as one run.
                    drops.add(range: (runStart ?? seq)...(end - 1), code: .old)
                    runStart = nil
                    break
                }
                seq += 1
            }
            if let r = runStart { drops.add(range: r...(end - 1), code: .old) }
            handled.raiseWatermark(to: end)
        }
        flushDrops()
        guard queue.isEmpty, active.allSatisfy({ $0.finWritten || $0.isClosed }) else { return }
        if phase == .serving {
            // END only once the backlog is written in full, and behind every byte of it the
            // transport still holds (the lowest send order of this subscription): a moq-rs reader
            // counts the track complete on END once it holds the newest group (sent first), then
            // ends the subscription, so an END ahead of the backlog lost it (a slow subscriber of
            // a finished flood got 58 of 1500 groups).
            phase = .ended
            session.setSendOrder(stream, order(for: 0) &- 1)
            writeControl(SubscribeResponse.end(group: end).encoded())
        }
        guard active.isEmpty else { return }
        session.finish(stream)
        session.counters.servedSubscriptionsCompleted += 1
        cleanup()
        // Keep listening until the peer closes its side.
        session.drain(stream)
    }

    /// Writes the DROP runs collected so far.
    func flushDrops() {
        for run in drops.take() {
            writeControl(SubscribeResponse.drop(start: run.start, end: run.end, code: run.code.rawValue).encoded())
        }
    }

    func writeControl(_ bytes: [UInt8]) {
        guard !session.isClosed, !done else { return }
        session.write(stream, Bytes(bytes), fin: false)
        let limit = session.config.limits.maxControlBacklogBytes
        if session.unsentBytes(stream) > limit {
            // A subscriber that never reads its subscribe stream: end this subscription only.
            session.hitLimit(.controlBacklog(limit))
            end(resetWith: .tooFarBehind)
        }
    }

    func end(resetWith code: StreamErrorCode) {
        guard !done else { return }
        // Every group not yet handed to the network goes, finished or not: a subscriber that
        // unsubscribes (a player moving to another rendition) does not want them taking its path.
        // (After END, a goodbye lets them through: ``finishByPeer()``.)
        for send in active { cancel(send, code: code == .malformedTrack ? .cancel : code) }
        active = []
        queue = []
        session.abortStream(stream, code)
        cleanup()
        session.detach(stream)
    }

    func cleanup() {
        guard !done else { return }
        phase = .done
        served.release(session)
        recheck?.cancel()
        recheck = nil
    }

    func sessionClosed() {
        cleanup()
    }
}

// SPDX-License-Identifier: MIT
#if canImport(MoqWire)
    import MoqSync
    import MoqWire
#endif

/// A subscription the peer holds on one of our tracks.
///
/// We resolve its start from the cache and its latency budget (SUBSCRIBE_START), then
/// send one uni stream per group. A subscriber slower than the publisher is met with
/// back-pressure, never with the end of its session: a group stream is opened only
/// when the connection has taken what the subscription already queued (its unsent
/// bytes are below ``SessionLimits/subscriptionSendWindow`` and the session's below
/// ``SessionLimits/maxUnsentBytes``), oldest group first, so a backlog is delivered in
/// order. Groups that wait become older; the ones that fall out of the subscriber's
/// budget (or out of the cache) before their stream opens are dropped with
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
    private var buffer: StreamBuffer
    var bufferedBytes: Int { buffer.buffered }
    private var subscribe: Subscribe?
    private var track: TrackProducer?
    /// The lowest sequence served, once resolved (SUBSCRIBE_START, or lower for a relayed track).
    private var floor: UInt64?
    /// Sequences queued, started or dropped; every sequence below its watermark is.
    private var handled = SequenceSet()
    /// Groups admitted but not started yet (waiting for room), by ascending sequence.
    private var queue: [GroupState] = []
    private var active: [GroupSend] = []
    /// The highest sequence for which a stream was opened (END never goes at or below it).
    private var highestStarted: UInt64?
    private var drops = DropRuns()
    /// A pending re-check while written groups still wait in the transport.
    private var recheck: (any Cancellable)?
    /// How soon a backed-up subscription looks at the transport again when nothing else wakes
    /// it: 20 ms, doubling up to 1 s while nothing moves (a peer that stopped reading costs
    /// one look a second, not fifty).
    private var recheckDelay = ServedSubscription.drainPoll
    static let drainPoll = Duration.milliseconds(20)
    static let maxDrainPoll = Duration.seconds(1)
    /// What the last look saw: whether the next one backs off.
    private var lastProgress: (active: Int, queued: Int, unsent: Int) = (0, 0, 0)
    /// Where the subscription stands; one value instead of flags that could disagree.
    private enum Phase {
        /// Waiting for SUBSCRIBE (or refusing it).
        case requested
        /// Serving a track.
        case serving
        /// END written; written groups still draining.
        case ended
        /// Finished, reset or the session closed: nothing more happens.
        case done
    }
    private var phase = Phase.requested
    /// The subscription's slot under ``SessionLimits/maxServedSubscriptions`` and its track observer.
    private var served = ServedRequest(.subscription)
    private var done: Bool { phase == .done }

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
    /// Rust subscriber says goodbye; before it, an unsubscribe. Either way, groups
    /// already written in full are left to the transport.
    private func peerCancelled() {
        guard !done else { return }
        if phase == .ended { return finishByPeer() }
        end(resetWith: .cancel)
    }

    private func finishByPeer() {
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

    private func begin(_ request: Subscribe) {
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

    private func apply(_ range: SubscriptionRange) {
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
    var queuedGroupCount: Int { queue.count }

    /// How long a subscription to a relayed track waits for the upstream's START once a group is
    /// there (ns).
    static let upstreamStartWaitNs: UInt64 = 250_000_000
    private var startRecheck: (any Cancellable)?
    private var awaitingUpstreamStartSince: UInt64?

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
            guard let start = resolveStart(track: track, range: range) else {
                return finishIfEnded(track)
            }
            // A relayed track's groups can arrive out of order: older groups of the
            // upstream subscription that show up later are still sent (within budget),
            // so the subscription starts at the upstream subscription's first group.
            var lowest = start
            if let upstreamStart = track.subscriptionStart.sequence, upstreamStart < start,
                upstreamStart >= range.groupStart
            {
                lowest = upstreamStart
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

    /// The subscriber's budget in ns (saturating: any varint may arrive).
    private func budget(_ range: SubscriptionRange) -> UInt64 {
        let (ns, overflow) = range.maxLatencyMs.multipliedReportingOverflow(by: 1_000_000)
        return overflow ? .max : ns
    }

    /// The oldest cached group (at or after the floor) within the latency budget of
    /// the newest; the newest itself when the budget is 0; nil while the track is empty.
    private func resolveStart(track: TrackProducer, range: SubscriptionRange) -> UInt64? {
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
    private func admit(_ snapshot: TrackProducer.Snapshot, track: TrackProducer, range: SubscriptionRange) {
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

    private func isPlaceholder(_ group: GroupState, track: TrackProducer) -> Bool {
        if case .aborted = track.frames(of: group, from: 0).status { return track.frameCount(of: group) == 0 }
        return false
    }

    /// Inserts by sequence: late groups of a relayed track can be older than queued ones.
    private func enqueue(_ group: GroupState) {
        if let last = queue.last, last.sequence > group.sequence {
            let i = queue.firstIndex { $0.sequence > group.sequence } ?? queue.count
            queue.insert(group, at: i)
        } else {
            queue.append(group)
        }
    }

    /// Queued groups that fell out of the budget (relative to the newest group) or out of
    /// the cache are dropped before any stream is opened for them.
    private func dropStale(_ snapshot: TrackProducer.Snapshot, range: SubscriptionRange) {
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
    private func dropGaps(_ snapshot: TrackProducer.Snapshot, range: SubscriptionRange) {
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

    /// Opens streams for queued groups, oldest first, while the connection has room.
    private func startQueued(range: SubscriptionRange) {
        while !done, let next = queue.first {
            switch room() {
            case .available:
                queue.removeFirst()
                startGroup(next, range: range)
            case .waitingForCredit:
                // The open in progress resumes the queue when the peer grants a stream.
                return
            case .waitingForDrain(let unsent):
                session.waitForRoom(self, unsent: unsent)
                return
            }
        }
    }

    private enum Room {
        case available
        /// A group stream of ours waits for the peer's stream credit.
        case waitingForCredit
        /// Too much is queued (ours, or the session's); carries our unsent bytes.
        case waitingForDrain(Int)
    }

    /// Bytes this subscription has written and the transport has not sent yet.
    private var ownUnsentBytes: Int {
        active.reduce(0) { n, send in n + (send.stream.map { session.unsentBytes($0) } ?? 0) }
    }

    /// Whether another group stream may open: nothing of ours waits for stream credit, ours
    /// is nearly all handed to the network, and the session is under its bound.
    private func room() -> Room {
        if active.contains(where: { $0.stream == nil && !$0.isClosed }) { return .waitingForCredit }
        let limits = session.config.limits
        let unsent = ownUnsentBytes
        guard session.totalUnsentBytes < limits.maxUnsentBytes else {
            session.hitLimit(.unsentBytes(limits.maxUnsentBytes))
            return .waitingForDrain(unsent)
        }
        return unsent < limits.subscriptionSendWindow ? .available : .waitingForDrain(unsent)
    }

    /// The session has room again (the transport drained): start what waits.
    func roomAvailable() {
        guard !done, let range = subscribe?.range, let track else { return }
        startQueued(range: range)
        for send in active { flush(send, track: track) }
        finishIfEnded(track)
    }

    private func order(for sequence: UInt64) -> Int64 {
        SendOrder.group(priority: subscribe?.range.priority ?? 0, subscribeID: subscribe?.id ?? 0, sequence: sequence)
    }

    private func startGroup(_ group: GroupState, range: SubscriptionRange) {
        guard let id = subscribe?.id else { return }
        let send = GroupSend(group: group, frameStart: range.frameStart, frameEnd: range.frameEnd)
        active.append(send)
        highestStarted = max(highestStarted ?? group.sequence, group.sequence)
        session.counters.groupsSent += 1
        if trySendAsDatagram(send) { return }
        session.openStream(
            bidirectional: false,
            isCancelled: { [weak self, weak send] in
                self?.done ?? true || send?.isClosed ?? true
            }
        ) { [weak self] stream in
            guard let self, !self.done, !send.isClosed else {
                self?.session.resetStream(stream, code: StreamErrorCode.cancel.wireValue)
                return
            }
            send.stream = stream
            self.session.setSendOrder(stream, self.order(for: group.sequence))
            let header = GroupHeader(subscribeID: id, sequence: group.sequence, frameStart: UInt64(send.nextFrame))
            let bytes = [UInt8(UniStreamType.group.rawValue)] + header.encoded()
            self.session.write(stream, Bytes(bytes), fin: false)
            send.bytesWritten += bytes.count
            self.session.install(GroupWriter(owner: self, send: send), on: stream)
            if let track = self.track { self.flush(send, track: track) }
            self.prune()
            // The open may have waited for credit: what queued behind it can go on.
            if let range = self.subscribe?.range { self.startQueued(range: range) }
            self.finishIfEnded(self.track)
        }
    }

    /// Datagram groups: one finished frame that fits in a QUIC DATAGRAM.
    private func trySendAsDatagram(_ send: GroupSend) -> Bool {
        guard send.group.isDatagram, let track, let id = subscribe?.id else { return false }
        let (frames, status) = track.frames(of: send.group, from: 0)
        guard status == .finished, frames.count == 1, let frame = frames.first else { return false }
        let datagram = Datagram(
            subscribeID: id, sequence: send.group.sequence, timestamp: frame.timestamp, payload: frame.payload)
        let encoded = datagram.encoded()
        guard encoded.count <= session.maxDatagramPayload,
            session.sendDatagram(Bytes(encoded))
        else { return false }
        session.counters.datagramsSent += 1
        send.isClosed = true
        return true
    }

    /// Writes the frames that arrived since the last flush; FIN or reset when the group ended.
    private func flush(_ send: GroupSend, track: TrackProducer) {
        guard let stream = send.stream, !send.isClosed, !send.finWritten else { return }
        let (frames, status) = track.frames(of: send.group, from: send.nextFrame)
        for frame in frames {
            if let end = send.frameEnd, UInt64(send.nextFrame) > end { break }
            guard let header = frame.encodedHeader(previous: send.lastTimestamp) else {
                // A timestamp that cannot be expressed as a delta on this stream (see Frame).
                session.resetStream(stream, code: StreamErrorCode.timestampMismatch.wireValue)
                send.isClosed = true
                return
            }
            session.write(stream, Bytes(header), fin: false)
            if !frame.payload.isEmpty { session.write(stream, frame.payload, fin: false) }
            send.bytesWritten += header.count + frame.payload.count
            send.lastTimestamp = frame.timestamp
            send.nextFrame += 1
            session.counters.framesSent += 1
            session.counters.bytesSent += UInt64(frame.payload.count)
        }
        let reachedEnd = send.frameEnd.map { UInt64(send.nextFrame) > $0 } ?? false
        switch status {
        case .finished where send.nextFrame >= track.frameCount(of: send.group) || reachedEnd:
            session.finish(stream)
            send.finWritten = true
        case .aborted(let code):
            session.resetStream(stream, code: code.wireValue)
            send.isClosed = true
        default:
            if reachedEnd {
                session.finish(stream)
                send.finWritten = true
            }
        }
    }

    /// Forgets groups that are closed, or completely written and handed to the
    /// network. Groups whose bytes still wait in the transport stay, so that they can
    /// be reset when they fall behind.
    private func prune() {
        var waiting = false
        active.removeAll { send in
            if send.isClosed { return true }
            guard send.finWritten, let stream = send.stream else { return false }
            if session.unsentBytes(stream) == 0 { return true }
            waiting = true
            return false
        }
        // A fallback when nothing else wakes us (a peer that stopped reading): look again later.
        if (waiting || !queue.isEmpty) && recheck == nil && !done {
            let progress = (active.count, queue.count, ownUnsentBytes)
            if progress == lastProgress {
                recheckDelay = min(recheckDelay * 2, Self.maxDrainPoll)
            } else {
                recheckDelay = Self.drainPoll
            }
            lastProgress = progress
            let box = WeakReference(self)
            recheck = session.scheduler.schedule(after: recheckDelay) {
                guard let me = box.value else { return }
                me.recheck = nil
                me.pump()
            }
        }
    }

    /// Resets in-flight groups that are stuck (bytes still unsent) and older than the
    /// latency budget relative to the newest group. With back-pressure only a group or two
    /// are in flight, so this happens when the subscriber stops reading, not when it is slow.
    private func expireStaleGroups(_ snapshot: TrackProducer.Snapshot, range: SubscriptionRange) {
        guard active.count > 1, let newest = snapshot.latest else { return }
        let budget = budget(range)
        for send in active where send.group !== newest {
            guard let stream = send.stream, !send.isClosed else { continue }
            let unsent = session.unsentBytes(stream)
            if unsent > 0 && newest.staleness(of: send.group) > budget {
                cancel(send, code: .old)
                session.counters.groupsResetAsOld += 1
                // Nothing of it left yet: the subscriber never saw it, and a DROP says why.
                if unsent >= send.bytesWritten { drops.add(send.group.sequence, code: .old) }
            }
        }
        flushDrops()
        prune()
    }

    private func cancel(_ send: GroupSend, code: StreamErrorCode) {
        guard !send.isClosed else { return }
        send.isClosed = true
        if let s = send.stream, !session.isClosed {
            session.resetStream(s, code: code.wireValue)
            session.detach(s)
        }
    }

    /// The peer stopped reading a group stream.
    func groupStopped(_ send: GroupSend) {
        cancel(send, code: .cancel)
        prune()
        finishIfEnded(track)
    }

    private func finishIfEnded(_ track: TrackProducer?) {
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
        if phase == .serving {
            phase = .ended
            writeControl(SubscribeResponse.end(group: end).encoded())
        }
        guard active.isEmpty, queue.isEmpty else { return }
        session.finish(stream)
        session.counters.servedSubscriptionsCompleted += 1
        cleanup()
        // Keep listening until the peer closes its side.
        session.drain(stream)
    }

    /// Writes the DROP runs collected so far.
    private func flushDrops() {
        for run in drops.take() {
            writeControl(SubscribeResponse.drop(start: run.start, end: run.end, code: run.code.rawValue).encoded())
        }
    }

    private func writeControl(_ bytes: [UInt8]) {
        guard !session.isClosed, !done else { return }
        session.write(stream, Bytes(bytes), fin: false)
        let limit = session.config.limits.maxControlBacklogBytes
        if session.unsentBytes(stream) > limit {
            // A subscriber that never reads its subscribe stream: end this subscription only.
            session.hitLimit(.controlBacklog(limit))
            end(resetWith: .tooFarBehind)
        }
    }

    private func end(resetWith code: StreamErrorCode) {
        guard !done else { return }
        for send in active where !(send.finWritten && code == .cancel) {
            cancel(send, code: code == .malformedTrack ? .cancel : code)
        }
        active = []
        queue = []
        session.abortStream(stream, code)
        cleanup()
        session.detach(stream)
    }

    private func cleanup() {
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

/// SUBSCRIBE_DROP runs being collected during one pump: consecutive sequences with the
/// same code become one message.
struct DropRuns {
    struct Run: Equatable {
        var start: UInt64
        var end: UInt64
        var code: StreamErrorCode
    }

    private var runs: [Run] = []

    mutating func add(_ sequence: UInt64, code: StreamErrorCode) { add(range: sequence...sequence, code: code) }

    mutating func add(range: ClosedRange<UInt64>, code: StreamErrorCode) {
        if var last = runs.last, last.code == code, last.end < UInt64.max, last.end + 1 == range.lowerBound {
            last.end = range.upperBound
            runs[runs.count - 1] = last
        } else {
            runs.append(Run(start: range.lowerBound, end: range.upperBound, code: code))
        }
    }

    /// The runs, in the order they were added; empties the collection.
    mutating func take() -> [Run] {
        defer { runs = [] }
        return runs
    }
}

/// The handler of an outgoing group stream: reacts to STOP_SENDING.
final class GroupWriter: StreamHandler {
    weak var owner: ServedSubscription?
    let send: ServedSubscription.GroupSend

    init(owner: ServedSubscription, send: ServedSubscription.GroupSend) {
        self.owner = owner
        self.send = send
    }

    func peerStopSending(wireCode: UInt64) {
        guard !send.isClosed else { return }
        // After FIN, a raw (unmapped) code is the Rust stack's noise; otherwise the subscriber skipped the group.
        if send.finWritten && StreamErrorCode(wireValue: wireCode) == nil { return }
        owner?.groupStopped(send)
    }

    func sessionClosed() {}
}

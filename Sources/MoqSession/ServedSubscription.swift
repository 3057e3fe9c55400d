// SPDX-License-Identifier: MIT
import MoqWire

/// A subscription the peer holds on one of our tracks: we resolve its start from
/// the cache and its latency budget, then send one uni stream per group, newest
/// first under congestion, resetting groups that fall too far behind.
final class ServedSubscription: StreamHandler, Pumpable {
    /// One group being sent on its own stream.
    final class GroupSend {
        let group: GroupState
        var stream: Int64?
        var nextFrame: Int
        var lastTimestamp: UInt64 = 0
        let frameEnd: UInt64?
        /// Reset, cancelled or sent as a datagram: nothing more is written.
        var isClosed = false
        /// The whole group (and FIN) was written; it may still be queued in the transport.
        var finWritten = false

        init(group: GroupState, frameStart: UInt64, frameEnd: UInt64?) {
            self.group = group
            nextFrame = Int(frameStart)
            self.frameEnd = frameEnd
        }
    }

    unowned let session: SessionCore
    let stream: Int64
    private var buffer: StreamBuffer
    private var subscribe: Subscribe?
    private var track: TrackProducer?
    private var trigger: PumpTrigger?
    private var observerToken: UInt64?
    /// The lowest sequence served, once resolved (SUBSCRIBE_START, or lower for a relayed track).
    private var floor: UInt64?
    /// Every sequence below has been started or dropped.
    private var watermark: UInt64 = 0
    /// Sequences at or above the watermark already started or dropped.
    private var handled = Set<UInt64>()
    private var active: [GroupSend] = []
    private var endSent = false
    /// A pending re-check while written groups still wait in the transport.
    private var recheck: (any Cancellable)?
    /// How often a backed-up subscription looks at the transport again.
    static let drainPoll = Duration.milliseconds(20)
    private var done = false
    private var counted = false

    init(session: SessionCore, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        self.buffer = buffer
    }

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
            while let update = try buffer.next(SubscribeUpdate.self) {
                apply(update.range)
            }
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
        if endSent { return finishByPeer() }
        end(resetWith: .cancel)
    }

    private func finishByPeer() {
        // The subscriber ended the subscription gracefully (the Rust subscriber does so
        // once it has END): groups still being written stop, but groups already
        // written in full are left to the transport to deliver.
        guard !done else { return }
        for send in active where !send.finWritten { cancel(send, code: .cancel) }
        active = []
        if endSent { session.counters.servedSubscriptionsCompleted += 1 }
        if session.phase != .closed { session.transport.finish(stream) }
        cleanup()
    }

    private func begin(_ request: Subscribe) {
        subscribe = request
        session.transport.setSendOrder(stream, SendOrder.control)
        guard session.servedSubscriptionCount < session.config.limits.maxServedSubscriptions else {
            session.counters.refusedRequests += 1
            session.hitLimit(.servedSubscriptions(session.config.limits.maxServedSubscriptions))
            return end(resetWith: .internal)
        }
        guard let origin = session.publishOrigin, let broadcast = origin.broadcast(request.broadcast) else {
            session.counters.refusedRequests += 1
            return end(resetWith: .unroutable)
        }
        guard let track = broadcast.track(request.track) else {
            session.counters.refusedRequests += 1
            return end(resetWith: .notFound)
        }
        session.servedSubscriptionCount += 1
        counted = true
        self.track = track
        let trigger = PumpTrigger(scheduler: session.scheduler, target: self)
        self.trigger = trigger
        observerToken = track.addObserver(trigger)
        pump()
    }

    private func apply(_ range: SubscriptionRange) {
        guard var request = subscribe else { return }
        request.range = range
        subscribe = request
        for send in active {
            if let s = send.stream {
                session.transport.setSendOrder(s, order(for: send.group.sequence))
            }
        }
        pump()
    }

    // MARK: Sending

    func pump() {
        guard !done, let request = subscribe, let track else { return }
        let range = request.range
        if case .aborted(let code)? = track.end {
            // The publisher's side went away: subscribers see INTERNAL, as from moq-relay.
            return end(resetWith: code == .cancel || code == .sessionClosed ? .internal : code)
        }
        if floor == nil {
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
            watermark = lowest
        }
        startNewGroups(track: track, range: range)
        for send in active { flush(send, track: track) }
        prune()
        expireStaleGroups(track: track, range: range)
        enforceBufferLimit()
        finishIfEnded(track)
    }

    /// The oldest cached group (at or after the floor) within the latency budget of
    /// the newest; the newest itself when the budget is 0; nil while the track is empty.
    private func resolveStart(track: TrackProducer, range: SubscriptionRange) -> UInt64? {
        guard let newest = track.latestGroup else { return nil }
        if let end = range.groupEnd, range.groupStart > end { return range.groupStart }
        let budget = range.maxLatencyMs &* 1_000_000
        let candidates = track.groups(from: range.groupStart)
        for g in candidates where newest.age(of: g) <= budget || g === newest {
            return g.sequence
        }
        return max(newest.sequence, range.groupStart)
    }

    /// Starts every group at or above the watermark that is not started yet, in
    /// sequence order (the transport sends the newest first). Groups already older
    /// than the budget are dropped (SUBSCRIBE_DROP, OLD), as are declared-dropped ones.
    /// The watermark moves over handled sequences, and over gaps once whatever
    /// follows them is itself stale.
    private func startNewGroups(track: TrackProducer, range: SubscriptionRange) {
        guard let newest = track.latestGroup else { return }
        let budget = range.maxLatencyMs &* 1_000_000
        let candidates = track.groups(from: watermark)
        for g in candidates where !handled.contains(g.sequence) {
            if let end = range.groupEnd, g.sequence > end { break }
            handled.insert(g.sequence)
            let stale = g !== newest && newest.age(of: g) > budget && track.end == nil
            let placeholder: Bool = {
                if case .aborted = track.frames(of: g, from: 0).status { return track.frameCount(of: g) == 0 }
                return false
            }()
            if stale || placeholder {
                writeControl(
                    SubscribeResponse.drop(start: g.sequence, end: g.sequence, code: StreamErrorCode.old.rawValue)
                        .encoded())
                if stale { session.counters.groupsResetAsOld += 1 }
                continue
            }
            startGroup(g, range: range)
        }
        // Advance the watermark.
        var index = 0
        while true {
            if handled.remove(watermark) != nil {
                watermark += 1
                continue
            }
            while index < candidates.count && candidates[index].sequence <= watermark { index += 1 }
            guard index < candidates.count else { break }
            let next = candidates[index]
            // A gap: once the group after it is stale, whatever fills it would be too.
            guard newest.age(of: next) > budget || track.end != nil else { break }
            writeControl(
                SubscribeResponse.drop(start: watermark, end: next.sequence - 1, code: StreamErrorCode.old.rawValue)
                    .encoded())
            watermark = next.sequence
        }
    }

    private func order(for sequence: UInt64) -> Int64 {
        SendOrder.group(priority: subscribe?.range.priority ?? 0, subscribeID: subscribe?.id ?? 0, sequence: sequence)
    }

    private func startGroup(_ group: GroupState, range: SubscriptionRange) {
        let send = GroupSend(group: group, frameStart: range.frameStart, frameEnd: range.frameEnd)
        active.append(send)
        session.counters.groupsSent += 1
        if trySendAsDatagram(send) { return }
        session.openStream(
            bidirectional: false,
            isCancelled: { [weak self, weak send] in
                self?.done ?? true || send?.isClosed ?? true
            }
        ) { [weak self] stream in
            guard let self, !self.done, !send.isClosed else {
                self?.session.transport.resetStream(stream, code: StreamErrorCode.cancel.wireValue)
                return
            }
            send.stream = stream
            self.session.transport.setSendOrder(stream, self.order(for: group.sequence))
            let header = GroupHeader(
                subscribeID: self.subscribe!.id, sequence: group.sequence, frameStart: UInt64(send.nextFrame))
            self.session.transport.write(
                stream, Bytes([UInt8(UniStreamType.group.rawValue)] + header.encoded()), fin: false)
            self.session.handlers[stream] = GroupWriter(owner: self, send: send)
            if let track = self.track { self.flush(send, track: track) }
            self.prune()
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
        guard encoded.count <= session.transport.maxDatagramPayload,
            session.transport.sendDatagram(Bytes(encoded))
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
            let header = frame.encodedHeader(previous: send.lastTimestamp)
            session.transport.write(stream, Bytes(header), fin: false)
            if !frame.payload.isEmpty { session.transport.write(stream, frame.payload, fin: false) }
            send.lastTimestamp = frame.timestamp
            send.nextFrame += 1
            session.counters.framesSent += 1
            session.counters.bytesSent += UInt64(frame.payload.count)
        }
        let reachedEnd = send.frameEnd.map { UInt64(send.nextFrame) > $0 } ?? false
        switch status {
        case .finished where send.nextFrame >= track.frameCount(of: send.group) || reachedEnd:
            session.transport.finish(stream)
            send.finWritten = true
        case .aborted(let code):
            session.transport.resetStream(stream, code: code.wireValue)
            send.isClosed = true
        default:
            if reachedEnd {
                session.transport.finish(stream)
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
            if session.transport.unsentBytes(stream) == 0 { return true }
            waiting = true
            return false
        }
        // Nothing else wakes us when the transport drains: look again shortly.
        if waiting && recheck == nil && !done {
            let box = WeakLoopBox(self)
            recheck = session.scheduler.schedule(after: Self.drainPoll) {
                guard let me = box.value else { return }
                me.recheck = nil
                me.pump()
            }
        }
    }

    /// Resets in-flight groups that are backed up (bytes still unsent) and older
    /// than the latency budget relative to the newest group.
    private func expireStaleGroups(track: TrackProducer, range: SubscriptionRange) {
        guard active.count > 1 else { return }
        guard let newest = track.latestGroup else { return }
        let budget = range.maxLatencyMs &* 1_000_000
        for send in active where send.group !== newest {
            guard let stream = send.stream, !send.isClosed else { continue }
            let age = newest.age(of: send.group)
            if age > budget && session.transport.unsentBytes(stream) > 0 {
                cancel(send, code: .old)
                session.counters.groupsResetAsOld += 1
            }
        }
        prune()
    }

    /// Bounds what one session may have queued: past the limit, this subscription's
    /// oldest in-flight groups (never the newest) are reset as too far behind.
    private func enforceBufferLimit() {
        let limit = session.config.limits.maxUnsentBytes
        guard session.transport.totalUnsentBytes > limit else { return }
        for send in active.dropLast() where !send.isClosed {
            guard session.transport.totalUnsentBytes > limit else { break }
            cancel(send, code: .tooFarBehind)
            session.counters.groupsResetForBuffer += 1
        }
        prune()
        session.hitLimit(.unsentBytes(limit))
    }

    private func cancel(_ send: GroupSend, code: StreamErrorCode) {
        guard !send.isClosed else { return }
        send.isClosed = true
        if let s = send.stream, session.phase != .closed {
            session.transport.resetStream(s, code: code.wireValue)
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
        guard !done, let track, case .finished(let end)? = track.end else { return }
        if floor != nil, watermark < end {
            // Groups still cached will be started by the next pump; the rest are gone.
            guard track.groups(from: watermark).allSatisfy({ handled.contains($0.sequence) }) else { return }
            // Whatever below the end was never started will not be: say so, in runs.
            func drop(_ from: UInt64, _ to: UInt64) {
                writeControl(SubscribeResponse.drop(start: from, end: to, code: StreamErrorCode.old.rawValue).encoded())
            }
            if end - watermark > 100_000 {
                drop(watermark, end - 1)
            } else {
                var runStart: UInt64?
                for seq in watermark..<end {
                    if handled.contains(seq) {
                        if let r = runStart { drop(r, seq - 1) }
                        runStart = nil
                    } else if runStart == nil {
                        runStart = seq
                    }
                }
                if let r = runStart { drop(r, end - 1) }
            }
            watermark = end
            handled = []
        }
        if !endSent {
            endSent = true
            writeControl(SubscribeResponse.end(group: end).encoded())
        }
        guard active.isEmpty else { return }
        session.transport.finish(stream)
        session.counters.servedSubscriptionsCompleted += 1
        cleanup()
        // Keep listening until the peer closes its side.
        session.handlers[stream] = DrainingStream(session: session, stream: stream)
    }

    private func writeControl(_ bytes: [UInt8]) {
        guard session.phase != .closed else { return }
        session.transport.write(stream, Bytes(bytes), fin: false)
    }

    private func end(resetWith code: StreamErrorCode) {
        guard !done else { return }
        for send in active where !(send.finWritten && code == .cancel) {
            cancel(send, code: code == .malformedTrack ? .cancel : code)
        }
        active = []
        session.abortStream(stream, code)
        cleanup()
        session.detach(stream)
    }

    private func cleanup() {
        guard !done else { return }
        done = true
        recheck?.cancel()
        recheck = nil
        if let token = observerToken { track?.removeObserver(token) }
        observerToken = nil
        if counted {
            session.servedSubscriptionCount -= 1
            counted = false
        }
    }

    func sessionClosed() {
        cleanup()
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
        // A raw 0 after FIN is the Rust stack's noise; otherwise the subscriber skipped the group.
        guard !send.isClosed else { return }
        // After FIN, a raw (unmapped) code is the Rust stack's noise.
        if send.finWritten && StreamErrorCode(wireValue: wireCode) == nil { return }
        owner?.groupStopped(send)
    }

    func sessionClosed() {}
}

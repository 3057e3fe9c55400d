// SPDX-License-Identifier: MIT
import MoqSync
import MoqWire

/// Group streams: started as the connection makes room (the live edge first, then the rest of a
/// backlog in order of sequence), written as frames arrive, sent as datagrams when they fit, and
/// reset when they fall too far behind.
extension ServedSubscription {
    /// Opens streams for queued groups while the connection has room, in the order of
    /// ``nextQueuedIndex()``: the newest group first, then the older ones from the oldest up.
    ///
    /// Linear in the groups it starts: a backlog (a deep subscription, a subscriber catching up)
    /// can be thousands of small groups at once. A stream that opens at once completes inside
    /// ``startGroup(_:range:)`` without calling back into here (that recursed once per group), and
    /// the room is summed once, then grown by each group started.
    func startQueued(range: SubscriptionRange) {
        guard !startingQueued else { return }
        startingQueued = true
        var started = false
        defer {
            startingQueued = false
            if started { prune() }
        }
        // Our unsent bytes: the streams started earlier only lose some while this loop runs
        // (nothing is written to them meanwhile), so the running sum is an upper bound.
        var unsent: Int?
        while !done, let index = nextQueuedIndex() {
            switch room(ownUnsent: unsent) {
            case .available:
                let before = unsent ?? ownUnsentBytes
                let next = queue.remove(at: index)
                let send = startGroup(next, range: range)
                started = true
                // Waiting for the peer's stream credit: its open resumes the queue.
                if send.stream == nil && !send.isClosed { return }
                unsent = before + (send.stream.map { session.unsentBytes($0) } ?? 0)
            case .waitingForCredit:
                // The open in progress resumes the queue when the peer grants a stream.
                return
            case .waitingForDrain(let unsent):
                session.waitForRoom(self, unsent: unsent)
                return
            }
        }
    }

    /// Which queued group opens next: the newest, unless a newer group already has a stream;
    /// then the oldest. moq-lite sends the newest group of a subscription first (§5), so the live
    /// edge does not wait behind a backlog: what queued behind a stalled path, or what a publisher
    /// or relay cached for a deep budget (a relay's 30 s upstream subscription after an outage).
    /// Each group newer than every started one is a new live edge and jumps the queue again.
    ///
    /// The rest of the backlog goes from the oldest up, not newest to oldest: readers that keep
    /// sequence order (``TrackConsumer``, moqsrc) wait at the oldest missing group, so groups
    /// arriving in sequence order behind the live edge are delivered one by one as they come,
    /// where newest-to-oldest would hold every one of them until the oldest (last) arrived; and a
    /// relay waiting for its upstream's first group (``upstreamBacklogDue(_:)``) has it second.
    /// What waits still ages out of the budget and is dropped (``dropStale(_:range:)``). Among the
    /// streams open at once the transport still sends the newest first (``order(for:)``).
    ///
    /// A subscription whose floor names a group (`groupStart` > 0) opens every group in sequence
    /// order, as moq-dev's publisher does for every subscription: its subscriber asked for the
    /// groups from there, and a moq-dev reader (`next_group`, moq-ffi) skips any group whose stream
    /// comes after a newer one's — live edge first lost it the floor group it named.
    func nextQueuedIndex() -> Int? {
        guard let newest = queue.last else { return nil }
        if (subscribe?.range.groupStart ?? 0) > 0 { return queue.startIndex }
        if let highest = highestStarted, newest.sequence < highest { return queue.startIndex }
        return queue.index(before: queue.endIndex)
    }

    enum Room {
        case available
        /// A group stream of ours waits for the peer's stream credit.
        case waitingForCredit
        /// Too much is queued (ours, or the session's); carries our unsent bytes.
        case waitingForDrain(Int)
    }

    /// Bytes this subscription has written and the transport has not sent yet.
    var ownUnsentBytes: Int {
        active.reduce(0) { n, send in n + (send.stream.map { session.unsentBytes($0) } ?? 0) }
    }

    /// Whether another group stream may open: nothing of ours waits for stream credit, ours
    /// is nearly all handed to the network, and the session is under its bound.
    /// - Parameter known: our unsent bytes when the caller keeps count (and knows that none of
    ///   ours waits for credit); nil to look at every active group.
    func room(ownUnsent known: Int? = nil) -> Room {
        if known == nil, active.contains(where: { $0.stream == nil && !$0.isClosed }) { return .waitingForCredit }
        let limits = session.config.limits
        let unsent = known ?? ownUnsentBytes
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

    func order(for sequence: UInt64) -> Int64 {
        SendOrder.group(priority: subscribe?.range.priority ?? 0, subscribeID: subscribe?.id ?? 0, sequence: sequence)
    }

    /// Starts one group: a datagram, or a stream (at once, or when the peer grants one).
    @discardableResult
    func startGroup(_ group: GroupState, range: SubscriptionRange) -> GroupSend {
        // The frame bounds qualify the start and end groups only (a later group starts at its keyframe).
        let send = GroupSend(
            group: group, frameStart: range.firstFrame(of: group.sequence),
            frameEnd: range.lastFrame(of: group.sequence))
        guard let id = subscribe?.id else {
            send.isClosed = true
            return send
        }
        active.append(send)
        highestStarted = max(highestStarted ?? group.sequence, group.sequence)
        session.counters.groupsSent += 1
        if trySendAsDatagram(send) { return send }
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
            // Opened at once, inside startQueued: its loop goes on, and its caller tidies up once.
            guard !self.startingQueued else { return }
            self.prune()
            // The open waited for credit: what queued behind it can go on.
            if let range = self.subscribe?.range { self.startQueued(range: range) }
            self.finishIfEnded(self.track)
        }
        return send
    }

    /// Datagram groups: one finished frame that fits in a QUIC DATAGRAM.
    func trySendAsDatagram(_ send: GroupSend) -> Bool {
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
    func flush(_ send: GroupSend, track: TrackProducer) {
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
    func prune() {
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
    func expireStaleGroups(_ snapshot: TrackProducer.Snapshot, range: SubscriptionRange) {
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

    func cancel(_ send: GroupSend, code: StreamErrorCode) {
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
}

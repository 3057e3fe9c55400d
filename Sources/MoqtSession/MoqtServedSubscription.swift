// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqSync
import MoqWire
import MoqtWire

/// A SUBSCRIBE the peer made and we serve from a track of ``MoqtSessionCore/publishOrigin``: one
/// unidirectional stream per group (subgroup 0; object id = frame index), FIN at its end; a datagram
/// group that fits goes as one OBJECT_DATAGRAM instead.
///
/// Start: LargestObject starts at object 0 of the latest group, as moq-dev's publisher does — by the
/// letter of the draft it would begin after the largest object, and a one-object catalog group would
/// never reach a new subscriber (docs/ietf/moqt-wire.md §8); NextGroupStart after the latest; an
/// absolute start at its object. Groups queue while the connection is busy, at most
/// ``MoqtSessionConfig/maxQueuedGroups`` (the oldest are skipped past that). When the track ends,
/// PUBLISH_DONE (TRACK_ENDED) follows the last group's FIN; after UNSUBSCRIBE, PUBLISH_DONE
/// (SUBSCRIPTION_ENDED) and the open streams are reset. FORWARD 0: SUBSCRIBE_OK, then nothing but
/// the PUBLISH_DONE at the track's end, until an update turns it on (``update(_:)``).
final class MoqtServedSubscription: TrackObserver, @unchecked Sendable {  // touched on the session thread only
    /// One group being written.
    struct Send {
        let stream: Int64
        let group: GroupState
        var written: Int
        /// The id of the last object written on the stream (nil before the first).
        var previous: UInt64?
    }

    weak var session: MoqtSessionCore?
    let request: MoqtWire.Subscribe
    let track: TrackProducer
    let alias: UInt64
    /// The first group to send and the object to start it at; nil until the track has a group.
    var start: UInt64?
    var startObject: UInt64 = 0
    /// The last group to send (inclusive); an update may lower it.
    var endGroup: UInt64?
    /// The subscriber's priority (lower is more urgent) and whether objects are forwarded: from
    /// SUBSCRIBE, then each update.
    var priority: UInt8
    var forward: Bool
    var active: [Send] = []
    /// The highest group started (or skipped).
    var highest: UInt64?
    /// The groups started or skipped at or below ``highest`` that the track still holds: a group
    /// that reaches the track after a newer one (a relay's upstream streams race) is still sent.
    var handled: Set<UInt64> = []
    /// Groups below this are not sent: they were handled and left the cache, or an update moved the
    /// start past them (a later start, or FORWARD 1 resuming at the latest group).
    var floor: UInt64 = 0
    var streamsOpened: UInt64 = 0
    var observer: UInt64?
    var done = false
    private let scheduled = Lock(false)

    init(session: MoqtSessionCore, request: MoqtWire.Subscribe, track: TrackProducer) {
        self.session = session
        self.request = request
        self.track = track
        alias = request.requestID
        priority = request.subscriberPriority
        forward = request.forward
        let latest = track.latestSequence
        switch request.filter {
        case .largestObject: start = latest
        case .nextGroupStart: start = latest.map { $0 &+ 1 }
        case .absoluteStart(let location), .absoluteRange(let location, _):
            start = location.group
            startObject = location.object
        }
        if case .absoluteRange(_, let end) = request.filter { endGroup = end } else { endGroup = nil }
    }

    /// SUBSCRIBE_OK, then what the track holds, then each change.
    func begin() {
        guard let session else { return }
        let snapshot = track.snapshot(from: 0)
        let largest = snapshot.latest.map {
            Location(group: $0.sequence, object: UInt64(max(track.frameCount(of: $0), 1) - 1))
        }
        session.send(
            .subscribeOk(
                SubscribeOk(requestID: request.requestID, trackAlias: alias, groupOrder: .ascending, largest: largest)))
        // FORWARD 0: accepted, but nothing is sent and no demand is expressed (a relay's track may
        // still be pulled for others) until an update turns forwarding on.
        // IETF subscriptions carry no latency budget: no preference is expressed (a relay keeps its
        // default upstream). A range here asked for budget 0, and a moq-lite publisher behind the
        // relay then dropped a group still being written as soon as the next began.
        if forward { track.demand(nil) }
        observer = track.addObserver(self)
        pump()
    }

    func trackDidChange() {
        // Any thread: one hop to the session thread per burst of changes.
        guard
            scheduled.withLock({ s in
                defer { s = true }; return !s
            })
        else { return }
        guard let scheduler = session?.scheduler else { return }
        let box = WeakReference(self)
        scheduler.execute {
            guard let self = box.value else { return }
            self.scheduled.withLock { $0 = false }
            self.pump()
        }
    }

    /// Starts the groups that are due (while the connection has room) and writes what arrived.
    func pump() {
        guard !done, let session, session.isReady else { return }
        let snapshot = track.snapshot(from: start ?? 0)
        if start == nil { start = snapshot.groups.first?.sequence }
        // Write what arrived on the open streams.
        var index = 0
        while index < active.count {
            if write(&active[index]) { active.remove(at: index) } else { index += 1 }
        }
        // Open streams for the groups that are due.
        // What the track no longer holds is forgotten (the set stays within the cache), and not sent
        // if it reappears.
        if let oldest = snapshot.groups.first?.sequence, handled.contains(where: { $0 < oldest }) {
            handled = handled.filter { $0 >= oldest }
            floor = max(floor, oldest)
        }
        var due = snapshot.groups.filter { g in
            guard forward else { return false }
            return
                g.sequence >= max(start ?? 0, floor) && !handled.contains(g.sequence)
                && (endGroup.map { g.sequence <= $0 } ?? true)
        }
        if due.count > session.config.maxQueuedGroups {
            let skipped = due.count - session.config.maxQueuedGroups
            session.counters.groupsSkipped += UInt64(skipped)
            for group in due.prefix(skipped) { markHandled(group.sequence) }
            due.removeFirst(skipped)
        }
        for group in due {
            if sendAsDatagram(group) {
                markHandled(group.sequence)
                continue
            }
            guard session.transport.totalUnsentBytes < session.config.maxUnsentBytes else {
                return session.waitForRoom(self, drain: true)
            }
            guard let stream = session.transport.openStream(bidirectional: false) else {
                // Stream credit, not bytes: waiting for a drain that has already happened looped at once.
                return session.waitForRoom(self, drain: false)
            }
            markHandled(group.sequence)
            streamsOpened += 1
            session.counters.groupsSent += 1
            session.outgoingGroups[stream] = self
            // Newer groups first among the open ones, under the subscriber's priority.
            session.transport.setSendOrder(stream, sendOrder(group.sequence))
            var header = WireWriter()
            SubgroupHeader(trackAlias: alias, group: group.sequence, publisherPriority: 0)
                .encode(into: &header, version: session.version)
            session.transport.write(stream, Bytes(header.bytes), fin: false)
            let first = group.sequence == start ? Int(clamping: startObject) : 0
            var send = Send(stream: stream, group: group, written: first)
            if !write(&send) { active.append(send) }
        }
        finishIfEnded(snapshot)
    }

    /// A datagram group (one finished frame) as an OBJECT_DATAGRAM when the peer takes datagrams and
    /// it fits: object 0, END_OF_GROUP, no object id on the wire, the timestamp as property `0x10`
    /// (type `0x07`, moq-ffi's form). False: it goes on a stream like any group.
    func sendAsDatagram(_ group: GroupState) -> Bool {
        guard group.isDatagram, let session, group.sequence != start || startObject == 0 else { return false }
        let (frames, status) = track.frames(of: group, from: 0)
        guard status == .finished, frames.count == 1, let frame = frames.first else { return false }
        let datagram = ObjectDatagram(
            trackAlias: alias, group: group.sequence,
            extensions: KeyValuePairs([.init(ObjectDatagram.timestampKey, .varint(frame.timestamp))]),
            body: .payload(frame.payload)
        ).encoded(version: session.version)
        guard datagram.count <= session.transport.maxDatagramPayload,
            session.transport.sendDatagram(Bytes(datagram))
        else { return false }
        session.counters.datagramsSent += 1
        session.counters.objectsSent += 1
        return true
    }

    /// Newer groups first among the open ones, under the subscriber's priority.
    func sendOrder(_ sequence: UInt64) -> Int64 {
        Int64(priority ^ 0xFF) << 48 | Int64(sequence & 0xFFFF_FFFF_FFFF)
    }

    /// SUBSCRIBE_UPDATE / REQUEST_UPDATE. A new priority re-orders the open streams. FORWARD 0 stops
    /// opening groups (the open ones finish); FORWARD 1 resumes at the latest group (what came while
    /// paused is not sent). A range only narrows: a later start skips the groups before it that were
    /// not started, a lower end bounds the subscription (which ends once that group is sent), and an
    /// earlier start, a higher end or none keep what there is.
    func update(_ update: RequestUpdate) {
        guard !done, let session else { return }
        if let p = update.subscriberPriority, p != priority {
            priority = p
            for send in active { session.transport.setSendOrder(send.stream, sendOrder(send.group.sequence)) }
        }
        if let f = update.forward, f != forward {
            forward = f
            if f {
                if let latest = track.latestSequence { floor = max(floor, latest) }
                track.demand(nil)
            }
        }
        switch update.filter {
        case .absoluteStart(let s)?:
            floor = max(floor, s.group)
        case .absoluteRange(let s, let e)?:
            floor = max(floor, s.group)
            endGroup = min(endGroup ?? e, e)
        default:
            break
        }
        pump()
    }

    func markHandled(_ sequence: UInt64) {
        handled.insert(sequence)
        highest = max(highest ?? sequence, sequence)
    }

    /// Writes the frames of `send` that arrived; true once its stream is done (FIN or reset).
    func write(_ send: inout Send) -> Bool {
        guard let session else { return true }
        let (frames, status) = track.frames(of: send.group, from: send.written)
        if !frames.isEmpty {
            var w = WireWriter()
            let header = SubgroupHeader(trackAlias: alias, group: send.group.sequence, publisherPriority: 0)
            for (offset, frame) in frames.enumerated() {
                let id = UInt64(send.written + offset)
                SubgroupObject(id: id, payload: frame.payload)
                    .encode(into: &w, after: send.previous, header: header, version: session.version)
                send.previous = id
            }
            send.written += frames.count
            session.counters.objectsSent += UInt64(frames.count)
            session.transport.write(send.stream, Bytes(w.bytes), fin: false)
        }
        switch status {
        case .open:
            return false
        case .finished:
            session.transport.finish(send.stream)
            session.outgoingGroups[send.stream] = nil
            return true
        case .aborted:
            session.transport.resetStream(send.stream, code: MoqtCode.streamInternal)
            session.outgoingGroups[send.stream] = nil
            return true
        }
    }

    /// After the track's end, once every group is written: PUBLISH_DONE (TRACK_ENDED).
    func finishIfEnded(_ snapshot: TrackProducer.Snapshot) {
        guard let session, active.isEmpty else { return }
        let lowest = max(start ?? 0, floor)
        // The range's last group was started, or an update left nothing in it.
        let rangeReached = endGroup.map { end in (highest.map { $0 >= end } ?? false) || end < lowest } ?? false
        let ended: Bool
        if rangeReached, let end = endGroup {
            // Every group of the range the track holds was sent (one that overtook another waits for it).
            ended = snapshot.groups.allSatisfy { g in
                g.sequence < lowest || g.sequence > end || handled.contains(g.sequence)
            }
        } else if let end = snapshot.end {
            if case .finished(let next) = end, let highest, next > highest &+ 1, snapshot.latest != nil {
                ended = false  // groups still to come from the cache
            } else {
                ended = true
            }
        } else {
            ended = false
        }
        guard ended else { return }
        // The end of the range is SUBSCRIPTION_ENDED ("the end of the filter"); the track's, TRACK_ENDED.
        let code: UInt64 =
            if case .aborted? = snapshot.end {
                MoqtCode.internalError
            } else if rangeReached {
                MoqtCode.subscriptionEnded
            } else {
                MoqtCode.trackEnded
            }
        session.send(
            .publishDone(
                PublishDone(requestID: request.requestID, statusCode: code, streamCount: streamsOpened, reason: "")))
        end()
    }

    /// The subscriber stopped reading a group (STOP_SENDING): that stream is reset, the rest goes on.
    func groupStopped(stream: Int64) {
        guard let i = active.firstIndex(where: { $0.stream == stream }) else { return }
        session?.transport.resetStream(stream, code: MoqtCode.cancelled)
        session?.outgoingGroups[stream] = nil
        active.remove(at: i)
    }

    /// UNSUBSCRIBE: the open streams are reset, PUBLISH_DONE (SUBSCRIPTION_ENDED) answers.
    func unsubscribed() {
        guard !done, let session else { return }
        for send in active {
            session.transport.resetStream(send.stream, code: MoqtCode.cancelled)
            session.outgoingGroups[send.stream] = nil
        }
        active = []
        session.send(
            .publishDone(
                PublishDone(
                    requestID: request.requestID, statusCode: MoqtCode.subscriptionEnded, streamCount: streamsOpened,
                    reason: "")))
        end()
    }

    /// Ends the request (its id's place returns to the peer).
    func end() {
        stop()
        session?.served[request.requestID] = nil
        session?.peerRequestEnded()
    }

    /// Stops observing the track (the session closes, or the request ended).
    func stop() {
        guard !done else { return }
        done = true
        if let observer { track.removeObserver(observer) }
        observer = nil
        session?.waitingForRoom.removeAll { $0 === self }
    }
}

extension MoqtSessionCore {
    /// The peer's SUBSCRIBE: served from the origin, or refused (TRACK_DOES_NOT_EXIST / DOES_NOT_EXIST).
    func serveSubscribe(_ request: MoqtWire.Subscribe) {
        func refuse(_ code: UInt64, _ reason: String) {
            counters.subscriptionsRefused += 1
            refuseRequest(.subscribe, request.requestID, code: code, reason: reason)
        }
        let track: TrackProducer
        switch servedTrack(namespace: request.namespace, name: request.trackName) {
        case .failure(let refusal): return refuse(refusal.code, refusal.reason)
        case .success(let t): track = t
        }
        counters.subscriptionsServed += 1
        let subscription = MoqtServedSubscription(session: self, request: request, track: track)
        served[request.requestID] = subscription
        subscription.begin()
    }
}

extension MoqtSessionCore {
    /// The peer's SUBSCRIBE_UPDATE / REQUEST_UPDATE (its own request id already accepted and ended):
    /// applied to the subscription it names. Draft-16 answers REQUEST_OK, or REQUEST_ERROR
    /// (DOES_NOT_EXIST) for a subscription that is not served (ended, or never asked: an update can
    /// cross a PUBLISH_DONE); draft-14 has no answer, and such an update is only counted.
    func serveUpdate(_ update: RequestUpdate) {
        guard let subscription = served[update.existingRequestID], !subscription.done else {
            counters.updatesRefused += 1
            guard version == .draft16 else { return }
            return send(
                .requestError(
                    RequestError(
                        kind: nil, requestID: update.requestID, code: MoqtCode.doesNotExist(version),
                        reason: "no subscription \(update.existingRequestID)")))
        }
        counters.updatesApplied += 1
        if version == .draft16 { send(.requestOk(RequestOk(kind: nil, requestID: update.requestID))) }
        subscription.update(update)
    }
}

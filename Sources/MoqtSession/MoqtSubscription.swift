// SPDX-License-Identifier: MIT
public import MoqModel
import MoqSession
import MoqSync
public import MoqWire
public import MoqtWire

/// One of our SUBSCRIBEs: what arrives is written into `track` (group = Group ID, frames in object
/// order). A refusal aborts the track (NOT_FOUND for a track or broadcast that does not exist);
/// PUBLISH_DONE finishes it once the streams it counts have arrived (or after a second with no new
/// stream, as when the count is 0 or unknown).
final class MoqtSubscription {
    weak var session: MoqtSessionCore?
    let requestID: UInt64
    let track: TrackProducer
    var alias: UInt64?
    /// Group streams that arrived for this subscription, and those of them still being read.
    var streamsReceived: UInt64 = 0
    var openStreams = 0
    /// PUBLISH_DONE's stream count, once it came.
    var expectedStreams: UInt64?
    var finishTimer: (any Cancellable)?

    /// What the track ends with if the session closes first (nil: it is left open).
    let sessionClosedCode: StreamErrorCode?
    /// What SUBSCRIBE asked: a LargestObject subscription may start inside a group (moq-dev's relay
    /// starts after the object it holds), whose first objects a joining FETCH brings.
    let filter: SubscriptionFilter
    /// The priority and forwarding the publisher has (from SUBSCRIBE, then each update sent).
    var priority: UInt8
    var forward: Bool
    /// Where the publisher starts it, once SUBSCRIBE_OK said (draft-14's update repeats it).
    var start: Location?
    /// An update asked for before SUBSCRIBE_OK: sent when it comes (the latest of each field wins).
    var pendingPriority: UInt8?
    var pendingForward: Bool?
    /// An update waits for a request id (one at a time: each id taken is used).
    var updateQueued = false
    /// The group SUBSCRIBE_OK named as the largest, until its stream showed whether it came whole.
    var joinGroup: UInt64?
    /// The joining FETCH for it, while one runs.
    var joining: OwnFetch?

    init(
        session: MoqtSessionCore, requestID: UInt64, track: TrackProducer,
        sessionClosedCode: StreamErrorCode? = .sessionClosed, filter: SubscriptionFilter = .largestObject,
        priority: UInt8 = 128, forward: Bool = true
    ) {
        self.session = session
        self.requestID = requestID
        self.track = track
        self.sessionClosedCode = sessionClosedCode
        self.filter = filter
        self.priority = priority
        self.forward = forward
    }

    /// How long the track waits after PUBLISH_DONE, when its stream count cannot be trusted, for
    /// streams still on their way: restarted by each one that begins or ends.
    static let quietAfterDone: Duration = .seconds(1)

    func publishDone(_ done: PublishDone) {
        // The track already ended (END_OF_TRACK came first): nothing more to wait for.
        if track.end != nil { return forget() }
        if done.statusCode != MoqtCode.trackEnded && done.statusCode != MoqtCode.subscriptionEnded {
            // moq-dev sends 200/500 (docs/ietf/moqt-wire.md §10): anything but the spec's clean
            // codes and 200 is a failure.
            if done.statusCode != 200 { return end(aborted: .internal) }
        }
        // moq-dev writes a stream count of 0 whatever it sent (moqt-wire.md §5.6), and 2^62-1 means
        // "unknown": neither is waited for (ending at once lost the groups still in flight, a whole
        // acknowledgement window in `make bench`); the track ends after a quiet second instead.
        if done.streamCount > 0 && done.streamCount < VarInt.max { expectedStreams = done.streamCount }
        finishWhenComplete()
        armQuietTimer()
    }

    /// A group stream of this subscription began (its header named the alias).
    func streamArrived() {
        streamsReceived += 1
        openStreams += 1
        if finishTimer != nil { armQuietTimer() }
    }

    /// A group stream of this subscription ended (FIN, reset, or not read): once PUBLISH_DONE's
    /// count has arrived and none is still being read, the track ends.
    func streamEnded() {
        openStreams -= 1
        finishWhenComplete()
        if finishTimer != nil { armQuietTimer() }
    }

    func finishWhenComplete() {
        if let expected = expectedStreams, streamsReceived >= expected, openStreams <= 0 { end(aborted: nil) }
    }

    private func armQuietTimer() {
        guard track.end == nil, let scheduler = session?.scheduler else { return }
        let box = WeakReference(self)
        finishTimer?.cancel()
        finishTimer = scheduler.schedule(after: Self.quietAfterDone) {
            box.value?.end(aborted: nil)
        }
    }

    /// Finishes (or aborts) the track and forgets the subscription. A group parked for its joining
    /// FETCH is written first (with what the fetch brought) when the track finishes cleanly.
    func end(aborted code: StreamErrorCode?) {
        if code == nil, let joining, let session { session.endJoiningFetch(joining, cancel: true) }
        if track.end == nil {
            if let code { track.abort(code) } else { track.finish() }
        }
        forget()
    }

    /// Forgets the subscription and leaves its track as it is.
    func forget() {
        finishTimer?.cancel()
        finishTimer = nil
        guard let session else { return }
        // Detached (another source feeds the track now) or ended: a parked group is not written.
        if let joining { session.endJoiningFetch(joining, cancel: true, resume: false) }
        session.subscriptions[requestID] = nil
        if let alias, session.aliases[alias] === self { session.aliases[alias] = nil }
    }
}

/// Cancels one subscription of a ``MoqtSessionCore`` (on the session's thread).
public struct MoqtSubscriptionHandle {
    weak var session: MoqtSessionCore?
    let request: PendingSubscription

    /// The request id; nil while the subscription waits for the peer to grant one (or when it was
    /// refused before it got one).
    public var requestID: UInt64? { request.id }

    /// UNSUBSCRIBE: nothing more is written into the track, which is finished. A subscription
    /// still waiting for a request id is dropped from the queue without taking one.
    public func cancel() {
        guard !request.cancelled else { return }
        request.cancelled = true
        guard let id = request.id else { return request.track.finish() }
        guard let session, let subscription = session.subscriptions[id] else { return }
        session.send(.unsubscribe(requestID: id))
        subscription.end(aborted: nil)
    }

    /// SUBSCRIBE_UPDATE (draft-14) / REQUEST_UPDATE (draft-16): a new priority (lower is more urgent)
    /// and/or forwarding. Nothing is sent when neither changes. Asked while the SUBSCRIBE itself waits
    /// for a request id, it changes that SUBSCRIBE instead; asked before SUBSCRIBE_OK, it goes once
    /// that came (draft-14's must repeat the start the publisher gave). It takes a request id of its
    /// own (and waits for one like any request). moq-ffi 0.4.18's relay takes a priority update
    /// without answering (measured).
    public func update(priority: UInt8? = nil, forward: Bool? = nil) {
        guard !request.cancelled else { return }
        guard let id = request.id else {
            request.priority = priority ?? request.priority
            request.forward = forward ?? request.forward
            return
        }
        guard let session, let subscription = session.subscriptions[id] else { return }
        let wantsPriority = priority.flatMap {
            $0 != (subscription.pendingPriority ?? subscription.priority) ? $0 : nil
        }
        let wantsForward = forward.flatMap { $0 != (subscription.pendingForward ?? subscription.forward) ? $0 : nil }
        guard wantsPriority != nil || wantsForward != nil else { return }
        if let wantsPriority { subscription.pendingPriority = wantsPriority }
        if let wantsForward { subscription.pendingForward = wantsForward }
        if subscription.start != nil { session.sendUpdate(subscription) }
    }

    /// UNSUBSCRIBE, leaving the track open (another source feeds it now).
    public func detach() {
        guard !request.cancelled else { return }
        request.cancelled = true
        guard let id = request.id, let session, let subscription = session.subscriptions[id] else { return }
        session.send(.unsubscribe(requestID: id))
        subscription.forget()
    }
}

/// A subscription from the moment it is asked for: its id comes when the peer grants one.
final class PendingSubscription {
    let track: TrackProducer
    var id: UInt64?
    var cancelled = false
    /// An update asked before the id came: the SUBSCRIBE goes with it.
    var priority: UInt8?
    var forward: Bool?

    init(track: TrackProducer) { self.track = track }
}

extension MoqtSessionCore {
    /// Subscribes to `track` of the broadcast at `broadcast` (its namespace is the path's segments);
    /// what arrives is written into `into`. Waits for a request id if the peer has granted none;
    /// `into` is aborted (``StreamErrorCode/internal`` when too many requests wait,
    /// ``StreamErrorCode/sessionClosed`` when the session closes first). `forward` false asks for
    /// SUBSCRIBE_OK only (the largest location), no objects. `sessionClosedCode`: what `into` ends
    /// with if the session closes first (nil leaves it open, for a relay that feeds it from elsewhere).
    @discardableResult
    public func subscribe(
        broadcast: String, track: String, into: TrackProducer, filter: SubscriptionFilter = .largestObject,
        priority: UInt8 = 128, forward: Bool = true, sessionClosedCode: StreamErrorCode? = .sessionClosed
    ) -> MoqtSubscriptionHandle {
        let namespace = TrackNamespace(path: broadcast)
        let request = PendingSubscription(track: into)
        withRequestID(
            { [weak self] id in
                guard let self else { return }
                request.id = id
                let priority = request.priority ?? priority
                let forward = request.forward ?? forward
                self.subscriptions[id] = MoqtSubscription(
                    session: self, requestID: id, track: into, sessionClosedCode: sessionClosedCode, filter: filter,
                    priority: priority, forward: forward)
                self.send(
                    .subscribe(
                        MoqtWire.Subscribe(
                            requestID: id, namespace: namespace, trackName: Bytes(utf8: track),
                            subscriberPriority: priority, groupOrder: .ascending, forward: forward, filter: filter)))
            }, wanted: { !request.cancelled },
            refused: { [weak self] in
                if self?.phase != .closed {
                    into.abort(.internal)
                } else if let sessionClosedCode {
                    into.abort(sessionClosedCode)
                }
            })
        return MoqtSubscriptionHandle(session: self, request: request)
    }

    func subscriptionAccepted(_ ok: SubscribeOk) {
        guard let subscription = subscriptions[ok.requestID] else {
            // An answer to a subscription we already ended (UNSUBSCRIBE crossed it) is no fault.
            if isOurEndedRequest(ok.requestID) { return }
            return close(.protocolViolation, reason: "SUBSCRIBE_OK for request \(ok.requestID), never asked")
        }
        guard subscription.alias == nil else {
            return close(.protocolViolation, reason: "a second SUBSCRIBE_OK for request \(ok.requestID)")
        }
        if aliases[ok.trackAlias] != nil {
            return close(.duplicateTrackAlias, reason: "track alias \(ok.trackAlias) given twice")
        }
        subscription.alias = ok.trackAlias
        aliases[ok.trackAlias] = subscription
        if subscription.filter == .largestObject { subscription.joinGroup = ok.largest?.group }
        subscription.start = Self.start(of: subscription.filter, largest: ok.largest)
        if subscription.pendingPriority != nil || subscription.pendingForward != nil { sendUpdate(subscription) }
        // The streams of this alias that came before the OK are read now.
        let matching = unknownAliasStreams.filter { incomingGroups[$0]?.decoder.header?.trackAlias == ok.trackAlias }
        unknownAliasStreams.removeAll { matching.contains($0) }
        for stream in matching {
            guard let group = incomingGroups[stream] else { continue }
            group.waitTimer?.cancel()
            receiveGroup(group, [], fin: group.finReceived)
        }
    }

    /// Where a publisher starts a subscription with `filter`, given SUBSCRIBE_OK's largest location:
    /// after the largest object, at the next group, or where the filter says.
    static func start(of filter: SubscriptionFilter, largest: Location?) -> Location {
        switch filter {
        case .largestObject:
            largest.map { Location(group: $0.group, object: VarInt.saturatingAdd($0.object, 1)) }
                ?? Location(group: 0, object: 0)
        case .nextGroupStart: Location(group: largest.map { VarInt.saturatingAdd($0.group, 1) } ?? 0, object: 0)
        case .absoluteStart(let start), .absoluteRange(let start, _): start
        }
    }

    /// Sends the subscription's pending update once a request id is granted: on draft-14 every
    /// field (the start SUBSCRIBE_OK implied, the filter's end, the priority and forwarding now); on
    /// draft-16 only what changes.
    func sendUpdate(_ subscription: MoqtSubscription) {
        guard !subscription.updateQueued, let start = subscription.start else { return }
        subscription.updateQueued = true
        let id = subscription.requestID
        withRequestID(
            { [weak self] updateID in
                // Nothing here may fail once the id is taken (a gap in our ids is a protocol violation):
                // the subscription is held, its start captured, and a queued update runs only while
                // `wanted` (the subscription is still ours).
                guard let self else { return }
                subscription.updateQueued = false
                let priority = subscription.pendingPriority
                let forward = subscription.pendingForward
                subscription.pendingPriority = nil
                subscription.pendingForward = nil
                subscription.priority = priority ?? subscription.priority
                subscription.forward = forward ?? subscription.forward
                var update = RequestUpdate(
                    requestID: updateID, existingRequestID: id, subscriberPriority: priority, forward: forward)
                if self.version == .draft14 {
                    update.subscriberPriority = subscription.priority
                    update.forward = subscription.forward
                    if case .absoluteRange(_, let end) = subscription.filter {
                        update.filter = .absoluteRange(start, endGroup: max(end, start.group))
                    } else {
                        update.filter = .absoluteStart(start)
                    }
                }
                self.counters.updatesSent += 1
                if self.version == .draft16 {
                    if self.updatesAwaitingAnswer.count >= Self.maxUpdatesAwaitingAnswer {
                        self.updatesAwaitingAnswer.removeFirst()
                    }
                    self.updatesAwaitingAnswer.append(updateID)
                }
                self.send(.requestUpdate(update))
            },
            wanted: { [weak self, weak subscription] in
                guard let self, let subscription else { return false }
                return self.subscriptions[id] === subscription
            },
            refused: { [weak self] in
                // Too many requests wait (or the session closed): this update is lost, later ones may go.
                subscription.updateQueued = false
                subscription.pendingPriority = nil
                subscription.pendingForward = nil
                self?.counters.updatesDropped += 1
            })
    }

    /// True for one of our request ids (our parity, already used) whose request has ended.
    func isOurEndedRequest(_ id: UInt64) -> Bool {
        id % 2 == nextRequestID % 2 && id < nextRequestID && subscriptions[id] == nil && namespaceRequests[id] == nil
            && fetches[id] == nil
    }

    func requestRefused(_ error: RequestError) {
        if let i = updatesAwaitingAnswer.firstIndex(of: error.requestID) {
            // The subscription goes on as it was (moq-ffi then ends it with PUBLISH_DONE).
            updatesAwaitingAnswer.remove(at: i)
            counters.updatesRefusedByPeer += 1
        } else if let subscription = subscriptions[error.requestID] {
            let notFound = error.code == MoqtCode.doesNotExist(version) || error.code == 404
            subscription.end(aborted: notFound ? .notFound : .internal)
        } else if let request = namespaceRequests.removeValue(forKey: error.requestID) {
            request.handler(.refused(code: error.code, reason: error.reason))
        } else if let fetch = fetches[error.requestID] {
            // Not served (Cloudflare's relays have no FETCH): a joined group plays from where it came.
            // Does not exist, invalid range (nothing there), draft-14's no objects.
            let notFound =
                error.code == MoqtCode.doesNotExist(version) || error.code == FetchCode.invalidRange(version)
                || (version == .draft14 && error.code == FetchCode.noObjects)
            endJoiningFetch(fetch, cancel: false, failure: notFound ? .notFound : .internal)
        }
        // A refusal of a PUBLISH_NAMESPACE of ours: the peer will not ask for it; nothing waits.
    }
}

// SPDX-License-Identifier: MIT
public import MoqBase
import MoqModel
import MoqSession
import MoqSync
public import MoqWire
import MoqtWire

/// A FETCH of ours: a standalone one (``MoqtSessionCore/fetch(broadcast:track:group:objects:priority:completion:)``),
/// or a joining one — the first objects of the group a LargestObject subscription came into the
/// middle of. moq-dev's relay starts such a subscription after the object it holds (`{Largest.Group,
/// Largest.Object + 1}`, the draft's letter) and serves the objects before it to a Relative Joining
/// FETCH; without them a late joiner's first group lacks its keyframe, and a one-object catalog group
/// comes empty. The group's stream is parked until the fetch ends (or ``MoqtSessionConfig/joiningFetchWait``
/// passes), then written whole: the fetched objects, then its own. A fetch that is refused (relays
/// without FETCH) or brings less than the whole prefix leaves the group as it came.
final class OwnFetch {
    weak var subscription: MoqtSubscription?
    /// The group fetched (joined), and the objects wanted: `from` up to (not including) `before`;
    /// for a joining fetch, the first object id the stream carries (`.max`: it carried none).
    let group: UInt64
    let from: UInt64
    let before: UInt64
    /// A joining fetch's parked group stream.
    let stream: IncomingSubgroup?
    /// A standalone fetch's answer: the objects from `from` in id order (gaps are objects that do
    /// not exist), or why there are none.
    var completion: ((Result<[Bytes], StreamErrorCode>) -> Void)?
    var requestID: UInt64?
    /// The fetch stream, once its header named this request.
    var fetchStream: Int64?
    var objects: [UInt64: Bytes] = [:]
    var bytes = 0
    var timer: (any Cancellable)?
    var ended = false
    /// True while the FETCH is being asked (an immediate refusal must not resume the stream re-entrantly).
    var starting = false

    init(
        subscription: MoqtSubscription?, group: UInt64, from: UInt64 = 0, before: UInt64, stream: IncomingSubgroup?,
        completion: ((Result<[Bytes], StreamErrorCode>) -> Void)? = nil
    ) {
        self.subscription = subscription
        self.group = group
        self.from = from
        self.before = before
        self.stream = stream
        self.completion = completion
    }

    /// The fetched objects from 0 on without a gap, when they reach the stream's first object (or
    /// the stream carried none); otherwise nothing (a group with a hole would be worse than one that
    /// starts late).
    var prefix: [UInt64: Bytes] {
        var id: UInt64 = 0
        while objects[id] != nil, id < before { id += 1 }
        guard id == before || (before == .max && id == UInt64(objects.count)) else { return [:] }
        return objects
    }
}

/// A fetch stream from the peer: its header names the FETCH it answers.
final class IncomingFetch {
    let stream: Int64
    var decoder: FetchStreamDecoder
    var joining: OwnFetch?

    init(stream: Int64, version: MoqtVersion) {
        self.stream = stream
        decoder = FetchStreamDecoder(version: version)
    }
}

extension MoqtSessionCore {
    /// Objects a joining fetch may bring (with ``maxHeldBytes`` of payload).
    static let maxJoiningObjects = 65_536

    /// Whether a group stream of `subscription` may be written now: false while it is the group the
    /// subscription joined in the middle of and its first objects are being fetched (or its first
    /// object has not arrived yet to tell).
    func joinedGroupIsWhole(_ group: IncomingSubgroup, _ subscription: MoqtSubscription, _ header: SubgroupHeader)
        -> Bool
    {
        if let joining = subscription.joining, joining.stream === group {
            // Parked: what it holds meanwhile is bounded.
            guard group.heldBytes + group.decoder.buffered > Self.maxHeldBytes else { return false }
            joining.starting = true  // the caller goes on with the stream, with whatever was fetched
            endJoiningFetch(joining, cancel: true)
            return true
        }
        guard subscription.joinGroup == header.group else { return true }
        let first: UInt64
        if let object = group.held.first {
            first = object.id
        } else if group.finReceived {
            first = .max
        } else {
            return false  // decided on the first object
        }
        subscription.joinGroup = nil
        guard first > 0 else { return true }  // the group came whole (SwiftMoQ's servers start at the group)
        startJoiningFetch(subscription, parking: group, group: header.group, before: first)
        return subscription.joining == nil
    }

    private func startJoiningFetch(
        _ subscription: MoqtSubscription, parking stream: IncomingSubgroup, group: UInt64, before: UInt64
    ) {
        let joining = OwnFetch(subscription: subscription, group: group, before: before, stream: stream)
        subscription.joining = joining
        joining.starting = true
        defer { joining.starting = false }
        counters.joiningFetches += 1
        let box = WeakReference(self)
        let fetchBox = WeakReference(joining)
        joining.timer = scheduler.schedule(after: config.joiningFetchWait) {
            guard let self = box.value, let joining = fetchBox.value else { return }
            self.endJoiningFetch(joining, cancel: true)
        }
        withRequestID(
            { [weak self] id in
                guard let self else { return }
                joining.requestID = id
                self.fetches[id] = joining
                self.send(
                    .fetch(
                        Fetch(
                            requestID: id, subscriberPriority: subscription.priority, groupOrder: .ascending,
                            kind: .relativeJoining(subscription: subscription.requestID, groupOffset: 0))))
            }, wanted: { !joining.ended },
            refused: { [weak self] in self?.endJoiningFetch(joining, cancel: false) })
    }

    /// Ends a fetch of ours: the FETCH is cancelled when `cancel` (given up, or its subscription
    /// ended). A joining fetch's parked stream goes on with what it brought (`resume`) or is stopped;
    /// a standalone fetch answers with its objects, or with `failure`.
    func endJoiningFetch(
        _ joining: OwnFetch, cancel: Bool, resume: Bool = true, failure: StreamErrorCode? = nil
    ) {
        guard !joining.ended else { return }
        joining.ended = true
        joining.timer?.cancel()
        joining.timer = nil
        if let id = joining.requestID, fetches.removeValue(forKey: id) != nil, cancel, phase == .ready {
            send(.fetchCancel(requestID: id))
        }
        if let stream = joining.fetchStream, incomingFetches.removeValue(forKey: stream) != nil {
            transport.stopSending(stream, code: MoqtCode.cancelled)
        }
        if let completion = joining.completion {
            joining.completion = nil
            if let failure { return completion(.failure(failure)) }
            return completion(.success(joining.objects.sorted { $0.key < $1.key }.map(\.value)))
        }
        if joining.subscription?.joining === joining { joining.subscription?.joining = nil }
        guard let parked = joining.stream, phase != .closed, incomingGroups[parked.stream] === parked else { return }
        guard resume else {
            transport.stopSending(parked.stream, code: MoqtCode.cancelled)
            incomingGroups[parked.stream] = nil
            return
        }
        parked.prefix = joining.prefix
        if !joining.starting { receiveGroup(parked, [], fin: parked.finReceived) }
    }

    /// A unidirectional stream whose first byte is FETCH_HEADER's type.
    func receiveFetch(_ fetch: IncomingFetch, _ bytes: [UInt8], fin: Bool) {
        let events: [FetchStreamDecoder.Event]
        do {
            events = try fetch.decoder.feed(bytes, fin: fin)
        } catch {
            return close(.protocolViolation, reason: "fetch stream \(fetch.stream): \(error)")
        }
        for event in events {
            switch event {
            case .header(let id):
                guard let joining = fetches[id], joining.fetchStream == nil else {
                    // A fetch given up (or never asked, or answered twice): not read.
                    transport.stopSending(fetch.stream, code: MoqtCode.cancelled)
                    incomingFetches[fetch.stream] = nil
                    return
                }
                joining.fetchStream = fetch.stream
                fetch.joining = joining
            case .object(let object):
                guard let joining = fetch.joining, object.group == joining.group, object.id >= joining.from,
                    object.id < joining.before, object.status == .normal
                else { continue }
                counters.fetchedObjects += 1
                joining.bytes += object.payload.count
                let limit = joining.completion == nil ? Self.maxHeldBytes : MoqtLimits.maxObjectPayload
                guard joining.bytes <= limit, joining.objects.count < Self.maxJoiningObjects else {
                    joining.objects = [:]  // past the bounds: a joined group goes on as it came
                    return endJoiningFetch(joining, cancel: true, failure: .groupTooLarge)
                }
                joining.objects[object.id] = object.payload
            case .endOfRange:
                continue
            }
        }
        guard fin else { return }
        incomingFetches[fetch.stream] = nil
        if let joining = fetch.joining { endJoiningFetch(joining, cancel: false) }
    }
}

extension MoqtSessionCore {
    /// Fetches objects `objects` (all: nil) of group `group` of a track of the peer's with a
    /// standalone FETCH: `completion` gets them in id order (an object the publisher does not have
    /// is left out), or why not (``StreamErrorCode/notFound`` for an unknown track or a range with
    /// nothing, ``StreamErrorCode/controlTimeout`` after ``MoqtSessionConfig/fetchTimeout``). Bounded
    /// like a group: at most ``MoqtLimits/maxObjectPayload`` bytes and 65,536 objects.
    public func fetch(
        broadcast: String, track: String, group: UInt64, objects: Range<UInt64>? = nil, priority: UInt8 = 128,
        completion: @escaping (Result<[Bytes], StreamErrorCode>) -> Void
    ) {
        let range = objects ?? 0..<UInt64.max
        guard !range.isEmpty else { return completion(.success([])) }
        // A name past the bounds would close the session at the peer (or not be sent, its id spent).
        let namespace = TrackNamespace(path: broadcast)
        guard namespace.fields.count <= MoqtLimits.maxNamespaceFields,
            namespace.byteCount + track.utf8.count <= MoqtLimits.maxFullTrackName
        else { return completion(.failure(.notFound)) }
        let own = OwnFetch(
            subscription: nil, group: group, from: range.lowerBound, before: range.upperBound, stream: nil,
            completion: completion)
        let end =
            range.upperBound == .max
            ? Location(group: group, object: 0) : Location(group: group, object: range.upperBound)
        let box = WeakReference(self)
        let fetchBox = WeakReference(own)
        own.timer = scheduler.schedule(after: config.fetchTimeout) {
            guard let self = box.value, let own = fetchBox.value else { return }
            self.endJoiningFetch(own, cancel: true, failure: .controlTimeout)
        }
        own.starting = true
        defer { own.starting = false }
        withRequestID(
            { [weak self] id in
                guard let self else { return }
                own.requestID = id
                self.fetches[id] = own
                self.send(
                    .fetch(
                        Fetch(
                            requestID: id, subscriberPriority: priority, groupOrder: .ascending,
                            kind: .standalone(
                                namespace: namespace, trackName: Bytes(utf8: track),
                                start: Location(group: group, object: range.lowerBound), end: end))))
            }, wanted: { !own.ended },
            refused: { [weak self] in
                guard let self else {
                    // The core is going away (its deinit refuses what waits).
                    own.completion?(.failure(.sessionClosed))
                    own.completion = nil
                    return
                }
                self.endJoiningFetch(own, cancel: false, failure: self.phase == .closed ? .sessionClosed : .internal)
            })
    }
}

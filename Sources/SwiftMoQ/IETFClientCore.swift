// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire

/// ``MoqSession``'s API over a MoQ Transport core, for a client whose server chose IETF MoQ
/// Transport (``MoqProtocol``). Loop thread only.
///
/// What moq-lite has and MoQ Transport lacks here: TRACK_INFO (a track gets the default info),
/// PROBE (no reports), SUBSCRIBE_UPDATE (not sent yet), a latency budget (the publisher
/// is not asked for one: the player's own reader keeps its budget, and a long-form player's
/// backfill comes only from what a floor asks for), a frame end inside the last group of a
/// bounded subscription (the whole group comes), and failover (`onLost` is not asked).
/// Frames arrive with timestamp 0: hang's legacy container carries the media's own.
final class IETFClientCore: ClientCore {
    let core: MoqtSessionCore
    /// Announce handlers still open: each hears `.closed` when the session ends.
    private var announceHandlers: [UInt64: (AnnounceEvent) -> Void] = [:]
    private var nextHandler: UInt64 = 0

    init(_ core: MoqtSessionCore) { self.core = core }

    var isClosed: Bool { core.isClosed }

    func requestAnnouncements(prefix: String, handler: @escaping (AnnounceEvent) -> Void) -> any RequestCancelling {
        nextHandler += 1
        let key = nextHandler
        announceHandlers[key] = handler
        let namespace = core.subscribeNamespace(prefix: BroadcastPath.normalize(prefix)) { [weak self] event in
            if let announcement = event.announcement { return handler(announcement) }
            switch event {
            case .announced, .unannounced: break
            case .refused:
                guard let self, self.announceHandlers.removeValue(forKey: key) != nil else { return }
                // Refused by the peer (REQUEST_ERROR's codes are not moq-lite's), or still queued when the session closed.
                handler(.closed(self.core.isClosed ? .sessionClosed : .internal))
            case .ended:
                guard self?.announceHandlers.removeValue(forKey: key) != nil else { return }
                handler(.closed(nil))
            }
        }
        return NamespaceCancel(namespace: namespace) { [weak self] in self?.announceHandlers[key] = nil }
    }

    func subscribeTrack(
        broadcast: String, track: TrackProducer, range: SubscriptionRange, sessionClosedCode: StreamErrorCode?,
        onLost: ((StreamErrorCode) -> Bool)?
    ) -> any SubscriptionControl {
        if track.info == nil { track.setInfo(TrackInfo()) }
        return IETFSubscriptionControl(
            handle: core.subscribe(
                broadcast: BroadcastPath.normalize(broadcast), track: track.name, into: track,
                filter: Self.filter(range), priority: 255 &- range.priority, sessionClosedCode: sessionClosedCode))
    }

    /// moq-lite's bounds as a MoQ Transport filter: no floor and no end is the live edge
    /// (LargestObject, which moq-dev serves from the start of the latest group), a floor is
    /// AbsoluteStart, an end AbsoluteRange. MoQ Transport has no "live edge until group N": an end
    /// without a floor asks from group 0, which a relay serves from the oldest group it keeps.
    static func filter(_ range: SubscriptionRange) -> SubscriptionFilter {
        let start = Location(group: range.groupStart, object: range.frameStart)
        switch (range.groupStart, range.frameStart, range.groupEnd) {
        case (0, 0, nil): return .largestObject
        case (_, _, nil): return .absoluteStart(start)
        case (_, _, let end?): return .absoluteRange(start, endGroup: end)
        }
    }

    /// Not asked: ``MoqSession/trackInfo(broadcast:track:)`` refuses first, saying why.
    func trackInfo(
        broadcast: String, track: String, completion: @escaping (Result<TrackInfo, StreamErrorCode>) -> Void
    ) {
        completion(.failure(.internal))
    }

    /// A standalone FETCH of the group's frames (moq-dev's relays refuse it; SwiftMoQ's serve it from
    /// their cache). Frames arrive with timestamp 0, as over subscriptions.
    func fetch(_ request: MoqWire.Fetch, completion: @escaping (Result<[Frame], StreamErrorCode>) -> Void) {
        let end = request.frameEnd.map { $0 == .max ? UInt64.max : $0 + 1 } ?? .max
        core.fetch(
            broadcast: BroadcastPath.normalize(request.broadcast), track: request.track, group: request.group,
            objects: request.frameStart..<max(end, request.frameStart), priority: 255 &- request.priority
        ) { result in
            completion(result.map { $0.map { Frame(timestamp: 0, payload: $0) } })
        }
    }

    func requestProbe(handler: @escaping (Probe) -> Void, finished: @escaping () -> Void) { finished() }

    func close(_ code: SessionErrorCode, reason: String) {
        core.close(MoqtSessionError(rawValue: code.rawValue) ?? .internalError, reason: reason)
    }

    /// Open group streams, and subscriptions whose due groups wait for room (a drain must wait for them too).
    var activeServedGroups: Int {
        let usage = core.resourceUsage
        return usage.outgoingGroups + usage.waitingForRoom
    }

    var sessionCounters: SessionCounters { Self.counters(core) }

    /// A MoQ Transport core's counters in moq-lite's terms (groups, frames = objects, refusals).
    static func counters(_ core: MoqtSessionCore) -> SessionCounters {
        let c = core.counters
        var counters = SessionCounters()
        counters.setupReceived = core.wasReady
        counters.groupsSent = c.groupsSent
        counters.framesSent = c.objectsSent
        counters.groupsReceived = c.groupsReceived
        counters.framesReceived = c.objectsReceived
        counters.refusedRequests = c.subscriptionsRefused
        counters.datagramsSent = c.datagramsSent
        counters.datagramsReceived = c.datagramsReceived
        counters.malformedDatagrams = c.malformedDatagrams
        return counters
    }

    /// The session ended: every announce stream still open closes (after the core's `ended` events).
    func sessionClosed() {
        let handlers = announceHandlers.sorted { $0.key < $1.key }.map(\.value)
        announceHandlers = [:]
        for handler in handlers { handler(.closed(.sessionClosed)) }
    }
}

extension MoqtNamespaceEvent {
    /// A broadcast published or withdrawn, as moq-lite's announcements say it (nil for the others).
    var announcement: AnnounceEvent? {
        switch self {
        case .announced(let path): .active(path: path, route: AnnounceRoute())
        case .unannounced(let path): .ended(path: path)
        case .refused, .ended: nil
        }
    }
}

/// Withdraws a namespace subscription, and forgets its announce handler.
private struct NamespaceCancel: RequestCancelling {
    let namespace: MoqtNamespaceHandle
    let forget: () -> Void
    func cancel() {
        forget()
        namespace.cancel()
    }
}

/// A MoQ Transport subscription behind ``RemoteTrack``.
private struct IETFSubscriptionControl: SubscriptionControl {
    let handle: MoqtSubscriptionHandle
    /// Only the priority travels (SUBSCRIBE_UPDATE / REQUEST_UPDATE, when it changed): MoQ Transport has
    /// no latency budget, and moq-ffi 0.4.18 ends a draft-16 subscription whose update carries a range.
    func update(_ range: SubscriptionRange) { handle.update(priority: 255 &- range.priority) }
    func cancel() { handle.cancel() }
    func detach() { handle.detach() }
}

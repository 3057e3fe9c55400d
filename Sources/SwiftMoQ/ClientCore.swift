// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire

/// What ``MoqSession`` asks of the session core behind it, whichever protocol family the server
/// chose: moq-lite's ``SessionCore`` or MoQ Transport's core (``IETFClientCore``). Loop thread only.
protocol ClientCore: AnyObject {
    var isClosed: Bool { get }
    /// Announcements under `prefix`; the handler hears `.closed` last.
    func requestAnnouncements(prefix: String, handler: @escaping (AnnounceEvent) -> Void) -> any RequestCancelling
    /// Subscribes; what arrives is written into `track`.
    func subscribeTrack(
        broadcast: String, track: TrackProducer, range: SubscriptionRange, sessionClosedCode: StreamErrorCode?,
        onLost: ((StreamErrorCode) -> Bool)?
    ) -> any SubscriptionControl
    func trackInfo(
        broadcast: String, track: String, completion: @escaping (Result<TrackInfo, StreamErrorCode>) -> Void)
    func fetch(_ request: Fetch, completion: @escaping (Result<[Frame], StreamErrorCode>) -> Void)
    /// The peer's bandwidth reports; `finished` when there will be none.
    func requestProbe(handler: @escaping (Probe) -> Void, finished: @escaping () -> Void)
    func close(_ code: SessionErrorCode, reason: String)
    /// Group streams of ours still being written (a publisher drains them before closing).
    var activeServedGroups: Int { get }
    /// The session's counters, in moq-lite's terms.
    var sessionCounters: SessionCounters { get }
}

/// Ends a request (an announce or namespace subscription).
protocol RequestCancelling {
    func cancel()
}

/// Controls one subscription.
protocol SubscriptionControl {
    /// Changes priority, latency budget or bounds (a no-op where the protocol cannot).
    func update(_ range: SubscriptionRange)
    func cancel()
    /// Ends the subscription and leaves its track open for another to feed.
    func detach()
}

extension AnnounceRequestHandle: RequestCancelling {}
extension SubscriptionHandle: SubscriptionControl {}

extension SessionCore: ClientCore {
    func requestAnnouncements(prefix: String, handler: @escaping (AnnounceEvent) -> Void) -> any RequestCancelling {
        requestAnnounces(prefix: prefix, handler: handler)
    }

    func subscribeTrack(
        broadcast: String, track: TrackProducer, range: SubscriptionRange, sessionClosedCode: StreamErrorCode?,
        onLost: ((StreamErrorCode) -> Bool)?
    ) -> any SubscriptionControl {
        subscribe(
            broadcast: broadcast, track: track, range: range, sessionClosedCode: sessionClosedCode, onLost: onLost)
    }

    func requestProbe(handler: @escaping (Probe) -> Void, finished: @escaping () -> Void) {
        requestProbe(handler: handler)
    }

    var sessionCounters: SessionCounters { counters }
}

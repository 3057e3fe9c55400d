// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqtSession

/// What the relay pulls a track through: one route's session, moq-lite (``MoqSession``) or IETF
/// MoQ Transport (``IETFSession``).
protocol UpstreamSession: AnyObject, Sendable {
    /// The thread the session runs on.
    var loop: QUICEventLoop { get }
    /// Subscribes to the track named like `track` of `broadcast`, writing into `track`. `onLost` is
    /// asked when the peer ends the subscription with an error (true: the relay feeds the track
    /// from elsewhere); a session that cannot tell ends the track itself.
    func pull(
        broadcast: String, range: SubscriptionRange, into track: TrackProducer,
        onLost: (@Sendable (StreamErrorCode) -> Bool)?
    ) -> any UpstreamSubscription
    /// Closes the session.
    func closeUpstream()
}

/// One upstream subscription of a relayed track.
protocol UpstreamSubscription: Sendable {
    /// Asks for another range (priority, budget).
    func update(_ range: SubscriptionRange)
    /// Ends it; the track ends too.
    func cancel()
    /// Ends it and leaves the track open (another route feeds it now).
    func detach()
}

extension RemoteTrack: UpstreamSubscription {}

extension MoqSession: UpstreamSession {
    func pull(
        broadcast: String, range: SubscriptionRange, into track: TrackProducer,
        onLost: (@Sendable (StreamErrorCode) -> Bool)?
    ) -> any UpstreamSubscription {
        subscribe(broadcast: broadcast, range: range, into: track, sessionClosedCode: nil, onLost: onLost)
    }

    func closeUpstream() { close() }
}

extension IETFSession: UpstreamSession {
    /// IETF subscriptions carry no budget and no TRACK_INFO: the track gets the default info (moq-lite
    /// readers of the relay ask for it), and it ends with INTERNAL when this session goes, as moq-relay
    /// resets its subscribers when a publisher leaves; `onLost` is not asked (no failover yet).
    func pull(
        broadcast: String, range: SubscriptionRange, into track: TrackProducer,
        onLost: (@Sendable (StreamErrorCode) -> Bool)?
    ) -> any UpstreamSubscription {
        if track.info == nil { track.setInfo(TrackInfo()) }
        let remote = IETFRemoteTrack(loop: loop, broadcast: BroadcastPath.normalize(broadcast), track: track)
        let endpoint = LoopBound(connection)
        let box = LoopBound(remote)
        let priority = 255 &- range.priority
        loop.execute {
            guard let core = endpoint.value.moqtCore, !core.isClosed else { return box.value.track.abort(.internal) }
            box.value.started(
                core.subscribe(
                    broadcast: box.value.broadcast, track: box.value.track.name, into: box.value.track,
                    priority: priority, sessionClosedCode: .internal))
        }
        return remote
    }

    func closeUpstream() { close() }
}

extension IETFRemoteTrack: UpstreamSubscription {
    /// The first range stays: MoQ Transport carries no latency budget, and the relay's upstream
    /// priority does not follow its subscribers yet (``update(priority:forward:)`` could send it).
    func update(_ range: SubscriptionRange) {}
}

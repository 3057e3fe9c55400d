// SPDX-License-Identifier: MIT
import MoqSession
import MoqSync
import MoqWire

/// The upstream subscription of one relayed track, shaped by what its subscribers ask for: made
/// at once with the relay's default budget (TRACK_INFO needs it, and a publisher keeps only so
/// much), set by SUBSCRIBE_UPDATE to the first subscriber's budget (lower or higher: the
/// publisher then drops what it had queued beyond it) and raised when a later one asks for more.
/// The track outlives the session: ``RelayRoutes`` ends it, or feeds it through another route.
final class UpstreamDemand: Sendable {
    private struct State {
        var remote: (any UpstreamSubscription)?
        var range: SubscriptionRange?
        /// A subscriber's range has set the budget (until then it is the relay's default).
        var demanded = false
        var cancelled = false
        /// Cancelled by ``detach()``: the track stays open.
        var detached = false
    }

    /// The session the track is subscribed through (one route to the broadcast).
    let session: any UpstreamSession
    private let peerPath: String
    /// Weak: the track holds this (its demand handler), and the relay's broadcast holds the track.
    private let track: WeakReference<TrackProducer>
    private let defaultRange: SubscriptionRange
    /// Asked when the peer resets the subscription: true when another route takes the track over.
    private let onLost: (@Sendable (StreamErrorCode) -> Bool)?
    private let state = Lock(State())

    init(
        session: any UpstreamSession, peerPath: String, track: TrackProducer, defaultRange: SubscriptionRange,
        onLost: (@Sendable (StreamErrorCode) -> Bool)? = nil
    ) {
        self.session = session
        self.peerPath = peerPath
        self.track = WeakReference(track)
        self.defaultRange = defaultRange
        self.onLost = onLost
    }

    /// The budget asked of the publisher so far (ms).
    var budgetMs: UInt64 { state.withLock { $0.range?.maxLatencyMs ?? 0 } }

    /// The range subscribers asked for (nil while only the relay's default applies): what a
    /// replacement through another route asks for at once.
    var demandedRange: SubscriptionRange? { state.withLock { $0.demanded ? $0.range : nil } }

    /// A subscriber wants `wanted` (nil: the relay's default). Subscribes upstream on the first
    /// call; afterwards the first subscriber's budget replaces the default and later ones raise it.
    func demand(_ wanted: SubscriptionRange?) {
        let budget = wanted?.maxLatencyMs ?? defaultRange.maxLatencyMs
        enum Action {
            case none
            case subscribe(SubscriptionRange)
            case update(any UpstreamSubscription, SubscriptionRange)
        }
        let action = state.withLock { s -> Action in
            guard !s.cancelled else { return .none }
            guard var range = s.range else {
                let range = SubscriptionRange(priority: defaultRange.priority, maxLatencyMs: budget)
                s.range = range
                s.demanded = wanted != nil
                return .subscribe(range)
            }
            // The first subscriber's budget replaces the default, lower or higher; later ones only raise it.
            let first = wanted != nil && !s.demanded
            if wanted != nil { s.demanded = true }
            guard wanted != nil, first ? budget != range.maxLatencyMs : budget > range.maxLatencyMs else {
                return .none
            }
            range.maxLatencyMs = budget
            s.range = range
            // Not subscribed yet (another thread is subscribing): it applies the new range.
            guard let remote = s.remote else { return .none }
            return .update(remote, range)
        }
        switch action {
        case .none:
            return
        case .update(let remote, let range):
            remote.update(range)
        case .subscribe(let range):
            guard let track = track.value else { return }
            let remote = session.pull(broadcast: peerPath, range: range, into: track, onLost: onLost)
            let (cancelled, detached, raised) = state.withLock { s -> (Bool, Bool, SubscriptionRange?) in
                s.remote = remote
                return (s.cancelled, s.detached, s.range != range ? s.range : nil)
            }
            if detached {
                remote.detach()
            } else if cancelled {
                remote.cancel()
            } else if let raised {
                remote.update(raised)
            }
        }
    }

    /// Ends the upstream subscription (the last subscriber left, or the peer went away).
    func cancel() {
        let remote = state.withLock { s -> (any UpstreamSubscription)? in
            s.cancelled = true
            return s.remote
        }
        remote?.cancel()
        track.value?.onDemand(nil)
    }

    /// Ends the upstream subscription but leaves the track open: another route feeds it now.
    func detach() {
        let remote = state.withLock { s -> (any UpstreamSubscription)? in
            s.cancelled = true
            s.detached = true
            return s.remote
        }
        remote?.detach()
    }
}

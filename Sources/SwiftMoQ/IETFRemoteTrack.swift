// SPDX-License-Identifier: MIT
import MoqModel
import MoqQUIC
import MoqtSession

/// A subscription of an ``IETFSession`` to a peer's track: what arrives is written into
/// ``track``; ``cancel()`` sends UNSUBSCRIBE (or drops a request still waiting for an id).
public final class IETFRemoteTrack: @unchecked Sendable {  // `handle` is touched on the loop only
    /// The broadcast path.
    public let broadcast: String
    /// Where received groups are written; read it with ``consumer(maxLatencyMs:startAt:)``.
    public let track: TrackProducer
    let loop: QUICEventLoop
    var handle: MoqtSubscriptionHandle?
    /// What was asked before the subscription started (on the loop).
    private var pending: Ending?

    enum Ending { case cancel, detach }

    init(loop: QUICEventLoop, broadcast: String, track: TrackProducer) {
        self.loop = loop
        self.broadcast = broadcast
        self.track = track
    }

    /// A reader of the received groups (see ``TrackConsumer``), timed by the session's thread.
    public func consumer(maxLatencyMs: UInt64? = nil, startAt: UInt64? = nil) -> TrackConsumer {
        TrackConsumer(track: track, startAt: startAt, maxLatencyMs: maxLatencyMs, timers: LoopScheduler(loop: loop))
    }

    /// SUBSCRIBE_UPDATE / REQUEST_UPDATE: a new priority (lower is more urgent) and/or forwarding,
    /// sent when it changes something (see ``MoqtSubscriptionHandle/update(priority:forward:)``).
    /// moq-ffi 0.4.18 applies a priority; on draft-16 it ends the subscription for anything else.
    public func update(priority: UInt8? = nil, forward: Bool? = nil) {
        let box = LoopBound(self)
        loop.execute { box.value.handle?.update(priority: priority, forward: forward) }
    }

    /// Ends the subscription (UNSUBSCRIBE); the track finishes.
    public func cancel() { end(.cancel) }

    /// Ends the subscription (UNSUBSCRIBE) but leaves the track open: a relay feeds it from another route.
    public func detach() { end(.detach) }

    private func end(_ how: Ending) {
        let box = LoopBound(self)
        loop.execute {
            let me = box.value
            guard let handle = me.handle else { return me.pending = me.pending ?? how }
            switch how {
            case .cancel: handle.cancel()
            case .detach: handle.detach()
            }
        }
    }

    /// Started on the loop once the session has its core.
    func started(_ handle: MoqtSubscriptionHandle) {
        self.handle = handle
        switch pending {
        case .cancel?: handle.cancel()
        case .detach?: handle.detach()
        case nil: break
        }
    }

    /// The error the track ended with, as an API error; nil while live or when finished.
    public var error: MoqError? {
        guard case .aborted(let code)? = track.end else { return nil }
        return MoqError.from(code, broadcast: broadcast, track: track.name)
    }
}

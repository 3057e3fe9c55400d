// SPDX-License-Identifier: MIT
public import MoqCatalog
import MoqSync

/// ``PlayoutCore`` behind one lock, shared by an element's pads: each frame costs one lock here.
/// Every method is safe from any thread.
public final class Playout: Sendable {
    private let core: Lock<PlayoutCore>

    /// A playback with `policy`.
    public init(policy: PlayoutPolicy) {
        core = Lock(PlayoutCore(policy: policy))
    }

    /// The policy this playback was started with.
    public var policy: PlayoutPolicy { core.withLock { $0.policy } }

    public func register(_ kind: MediaKind) -> LaneID { core.withLock { $0.register(kind) } }
    public func unregister(_ id: LaneID) { core.withLock { $0.unregister(id) } }
    public func reset(_ id: LaneID, _ reset: LaneReset) { core.withLock { $0.reset(id, reset) } }
    public func skipRestOfGroup(_ id: LaneID, group: UInt64) {
        core.withLock { $0.skipRestOfGroup(id, group: group) }
    }

    /// See ``PlayoutCore/decide(_:view:now:)``.
    public func decide(_ frame: PlayoutFrame, view: LaneView, now: PlayoutNow) -> PlayoutDecision {
        core.withLock { $0.decide(frame, view: view, now: now) }
    }

    /// A push whose ``PlayoutPush/primes`` was set has returned: downstream is ready.
    public func pushReturned(_ id: LaneID) { core.withLock { $0.pushReturned(id) } }

    /// See ``PlayoutCore/pipelineIsPlaying()``.
    public func pipelineIsPlaying() { core.withLock { $0.pipelineIsPlaying() } }

    public func observe(_ id: LaneID, edge: EdgeSample?, now: PlayoutNow) {
        core.withLock { $0.observe(id, edge: edge, now: now) }
    }

    /// The pipeline's latency changed (LATENCY event), or a fixed `latency` did.
    public func setRenderDelay(ns: UInt64) { core.withLock { $0.renderDelayNs = ns } }
    public var renderDelayNs: UInt64 { core.withLock { $0.renderDelayNs } }
    public func setAdaptiveCeiling(ns: UInt64) { core.withLock { $0.setAdaptiveCeiling(ns: ns) } }

    public func markDiscontinuity() { core.withLock { $0.markDiscontinuity() } }
    public func rejoin(newClock: Bool) { core.withLock { $0.rejoin(newClock: newClock) } }
    @discardableResult
    public func splice(epoch: UInt64) -> Bool { core.withLock { $0.splice(epoch: epoch) } }
    public func awaitsSplice(epoch: UInt64) -> Bool { core.withLock { $0.awaitsSplice(epoch: epoch) } }
    @discardableResult
    public func seek(id: UInt64, timestampUs: UInt64, at runningNs: UInt64) -> Bool {
        core.withLock { $0.seek(id: id, timestampUs: timestampUs, at: runningNs) }
    }

    /// The running time of a timestamp on the timeline (nil before the first anchor).
    public func runningTime(ofUs timestampUs: UInt64, epoch: UInt64? = nil) -> UInt64? {
        core.withLock { $0.runningTime(ofUs: timestampUs, epoch: epoch) }
    }

    /// What the stats report.
    public func snapshot(now: PlayoutNow?) -> PlayoutSnapshot { core.withLock { PlayoutSnapshot($0, now: now) } }
}

/// The playout's state for the stats.
public struct PlayoutSnapshot: Sendable, Equatable {
    /// `fixed`, `adaptive` or `long-form`.
    public var mode: String
    /// `joining`, `playing`, `checking-continuity` or `splicing`.
    public var phase: String
    public var marginMs: Double
    public var retargets: Int
    /// How far ahead of its target the live edge plays now (ms; nil before the join or long-form).
    public var excessMs: Double?
    /// Catch-up: whether it is taking time out now, frames dropped and time taken out in all.
    public var catchingUp: Bool
    public var catchUpDrops: UInt64
    public var catchUpMs: Double
    /// The last join: how far before now it clipped (ms), and the live edge's estimate settled.
    public var joinClipMs: Double?
    public var edgeSettled: Bool

    package init(_ core: PlayoutCore, now: PlayoutNow?) {
        mode = core.policy.modeName
        switch core.phase {
        case .joining: phase = "joining"
        case .playing: phase = "playing"
        case .checkingContinuity: phase = "checking-continuity"
        case .splicing: phase = "splicing"
        }
        marginMs = Double(core.marginNs) / 1e6
        retargets = core.retargets
        excessMs = now.flatMap { core.policy.isLive ? core.excessNs(now: $0).map { Double($0) / 1e6 } : nil }
        catchingUp = core.catchUp.active
        catchUpDrops = core.catchUp.drops
        catchUpMs = Double(core.catchUp.droppedNs) / 1e6
        joinClipMs = nil
        edgeSettled = core.clocksSettled
        if let join = core.lastJoin, let now {
            joinClipMs = (Double(now.runningNs) - Double(join.clipNs)) / 1e6
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqSync
import Synchronization

/// Bounds of a track's cache of recent groups.
public struct CacheLimits: Sendable {
    /// Most bytes of frames kept; the oldest non-latest groups go first.
    public var maxBytes: Int
    /// Most groups kept.
    public var maxGroups: Int
    /// Caps the track's own `maxAgeMs` when set.
    public var maxAgeMs: UInt64?
    /// Keeps groups at least this long whatever the track's own max age says (a long-form
    /// player's deep buffer lives in its subscription's cache); bytes and counts still bound it.
    public var retainAgeMs: UInt64?
    /// A byte budget shared by many tracks (a relay's whole cache), if any.
    public var budget: CacheBudget?

    /// Most bytes of frames in one group: a group that would grow past it is aborted with
    /// GROUP_TOO_LARGE (the newest group is never evicted, so this is what bounds it).
    public var maxGroupBytes: Int

    public init(
        maxBytes: Int = 64 << 20, maxGroups: Int = 4096, maxAgeMs: UInt64? = nil, budget: CacheBudget? = nil,
        maxGroupBytes: Int = 32 << 20
    ) {
        self.maxBytes = maxBytes
        self.maxGroups = maxGroups
        self.maxGroupBytes = maxGroupBytes
        self.maxAgeMs = maxAgeMs
        self.budget = budget
    }

    /// Limits that keep groups for at least `retainAgeMs`.
    public static func retaining(ms retainAgeMs: UInt64) -> CacheLimits {
        var limits = CacheLimits()
        limits.retainAgeMs = retainAgeMs
        return limits
    }
}

/// Bytes cached across many tracks. When the total is over the limit, each track
/// that grows evicts its own oldest non-latest groups first.
public final class CacheBudget: Sendable {
    /// The limit in bytes.
    public let limit: Int
    private let used = Atomic<Int>(0)

    public init(limit: Int) { self.limit = limit }

    /// Bytes currently cached.
    public var bytes: Int { used.load(ordering: .relaxed) }
    var isOver: Bool { bytes > limit }
    func add(_ n: Int) { used.add(n, ordering: .relaxed) }
}

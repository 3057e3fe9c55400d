// SPDX-License-Identifier: MIT
public import MoqCatalog
public import MoqSession
public import MoqWire

/// How a player subscribes to a track and reads it: priority, latency budget, what the
/// subscription's cache keeps and how far behind the reader may fall before it skips.
public struct SubscriptionPolicy: Sendable, Equatable {
    public let kind: MediaKind
    /// moqsrc's `latency` (ms).
    public var latencyMs: UInt64
    /// Long-form playback's deep budget (`buffer-duration`, ms); nil when playing live.
    public let longFormBufferMs: UInt64?

    public init(kind: MediaKind, latencyMs: UInt64, longFormBufferMs: UInt64? = nil) {
        self.kind = kind
        self.latencyMs = latencyMs
        self.longFormBufferMs = longFormBufferMs
    }

    /// A budget that covers any finite broadcast (about 35 years), far below the varint ceiling.
    public static let wholeTrackMs: UInt64 = 1 << 40

    /// The deep budget in use (ms): `buffer-duration`, or the whole track for a finite broadcast
    /// (a file: every group is asked for and kept, from its start). Nil when playing live.
    public func deepBufferMs(finite: Bool) -> UInt64? {
        longFormBufferMs.map { finite ? Self.wholeTrackMs : $0 }
    }

    /// Audio first under congestion: it is small and a gap in it is heard. Long-form asks for its
    /// whole deep budget: the relay sends what it cached within it at once (faster than real
    /// time), then the live groups.
    public func range(finite: Bool) -> SubscriptionRange {
        SubscriptionRange(
            priority: kind == .audio ? 2 : 1,
            maxLatencyMs: VarInt.saturatingAdd(latencyMs, deepBufferMs(finite: finite) ?? 0))
    }

    /// Long-form: the subscription's cache holds the deep buffer (and a margin for the time frames
    /// spend between arriving and being played).
    public func cacheLimits(finite: Bool) -> CacheLimits {
        deepBufferMs(finite: finite).map { CacheLimits.retaining(ms: VarInt.saturatingAdd($0, 10_000)) }
            ?? CacheLimits()
    }

    /// The reader's skipping budget: the whole render delay plus the jitter budget (and the deep
    /// buffer), so that only a reader that has fallen behind what the sinks wait for skips groups.
    public func readerBudgetMs(renderDelayMs: UInt64, finite: Bool) -> UInt64 {
        VarInt.saturatingAdd(VarInt.saturatingAdd(renderDelayMs, latencyMs), deepBufferMs(finite: finite) ?? 0)
    }

    /// Long-form waits for a missing group as long as live playback at most (1 s), not for the
    /// whole deep budget (a restarted relay may announce a start it no longer holds).
    public var reorderWindowMs: UInt64? { longFormBufferMs == nil ? nil : TrackConsumer.defaultReorderWindowMs }

    /// A reader of `track` with this policy.
    public func reader(for track: TrackProducer, renderDelayMs: UInt64, finite: Bool, cmaf: CMAFTrack?) -> TrackReader {
        TrackReader(
            track: track, maxLatencyMs: readerBudgetMs(renderDelayMs: renderDelayMs, finite: finite),
            reorderWindowMs: reorderWindowMs, cmaf: cmaf)
    }

    /// A data track (`data-tracks`) is not skipped to catch up: every frame the relay still has
    /// within the budget (at least 10 s).
    public static func dataRange(latencyMs: UInt64, longFormBufferMs: UInt64?) -> SubscriptionRange {
        SubscriptionRange(
            priority: 3, maxLatencyMs: VarInt.saturatingAdd(max(latencyMs, 10_000), longFormBufferMs ?? 0))
    }
}

// SPDX-License-Identifier: MIT
import MoqSync
public import MoqWire
import Synchronization

/// How a group is doing.
public enum GroupStatus: Sendable, Equatable {
    /// Frames may still be appended.
    case open
    /// Complete.
    case finished
    /// Ended abnormally; frames already received are kept.
    case aborted(StreamErrorCode)
}

/// One group of a track. Its fields change only under its track's lock; read `frames`,
/// `byteCount` and `status` through the track (``TrackProducer/frames(of:from:)``). The
/// flags and the first timestamp, which subscriptions consult without taking the track's
/// lock, are atomics (`make tsan` found them read unlocked).
public final class GroupState: @unchecked Sendable {  // mutable fields: under the track's lock
    /// The group sequence.
    public let sequence: UInt64
    /// When the group was created, on the track's clock (ns).
    public let createdAt: UInt64
    var frames: [Frame] = []
    var byteCount = 0
    var status: GroupStatus = .open
    private let datagram = Atomic(false)
    private let cached = Atomic(false)
    /// ``firstTimestampNs``, with `UInt64.max` for none (a timestamp that large saturated anyway).
    private let firstTimestamp = Atomic(UInt64.max)
    /// ``lastTimestampNs``, likewise.
    private let lastTimestamp = Atomic(UInt64.max)
    /// When the newest frame arrived (ns, the track's clock); `createdAt` until one has.
    private let lastArrival: Atomic<UInt64>

    /// When the newest frame arrived (ns, the track's clock); when the group was created until one has.
    public var lastArrivalNs: UInt64 { lastArrival.load(ordering: .relaxed) }

    /// True for one-frame groups that may travel as QUIC datagrams.
    public internal(set) var isDatagram: Bool {
        get { datagram.load(ordering: .relaxed) }
        set { datagram.store(newValue, ordering: .relaxed) }
    }
    /// True while the track's cache holds the group (set on insert, cleared on eviction).
    package internal(set) var isCached: Bool {
        get { cached.load(ordering: .relaxed) }
        set { cached.store(newValue, ordering: .relaxed) }
    }
    /// The first frame's timestamp in ns (the track's timescale applied), once it has one.
    var firstTimestampNs: UInt64? {
        get {
            let ns = firstTimestamp.load(ordering: .relaxed)
            return ns == .max ? nil : ns
        }
        set { firstTimestamp.store(newValue ?? .max, ordering: .relaxed) }
    }

    /// The newest frame's timestamp in ns, once it has one.
    var lastTimestampNs: UInt64? {
        get {
            let ns = lastTimestamp.load(ordering: .relaxed)
            return ns == .max ? nil : ns
        }
        set { lastTimestamp.store(newValue ?? .max, ordering: .relaxed) }
    }

    init(sequence: UInt64, createdAt: UInt64) {
        self.sequence = sequence
        self.createdAt = createdAt
        lastArrival = Atomic(createdAt)
    }

    /// Records a frame's timestamp (ns) and arrival time (under the track's lock).
    func noteFrame(timestampNs: UInt64?, arrivedAt: UInt64) {
        if let timestampNs {
            if firstTimestampNs == nil { firstTimestampNs = timestampNs }
            lastTimestampNs = timestampNs
        }
        lastArrival.store(arrivedAt, ordering: .relaxed)
    }

    /// How far `other`'s newest frame lags this group's start: by the frames' timestamps when
    /// both have them and they say `other` is older, else by arrival. Unlike ``age(of:)``,
    /// arrival does not count once timestamps speak: a tail held up on a lossy link arrives
    /// late, but what it carries is no older for it. This decides whether the rest of an
    /// older group is still worth sending once this group exists: with groups longer than
    /// the latency budget (a 2 s GOP under a 300 ms budget) the older group's *start* is
    /// always out of budget, but its last frames were captured just before this group's
    /// keyframe and are as fresh as anything the subscriber has. Rust's relay measures
    /// ``age(of:)`` here and resets those tails under loss; we keep them (the subscriber
    /// still skips what arrives too late to play).
    public func staleness(of other: GroupState) -> UInt64 {
        let theirArrival = other.lastArrival.load(ordering: .relaxed)
        let arrival = createdAt > theirArrival ? createdAt - theirArrival : 0
        guard let mine = firstTimestampNs, let theirs = other.lastTimestampNs, mine > theirs else { return arrival }
        return mine - theirs
    }

    /// How much older `other` is than this group (0 when it is not older): by arrival, or by
    /// the first frames' timestamps, whichever is worse (as the Rust implementation measures it).
    /// A relay that receives a burst of cached groups at once sees them arrive together, but
    /// their timestamps still say how old they are. Groups of a received track can be created
    /// out of sequence order, so this never wraps.
    public func age(of other: GroupState) -> UInt64 {
        let arrival = createdAt > other.createdAt ? createdAt - other.createdAt : 0
        guard let mine = firstTimestampNs, let theirs = other.firstTimestampNs, mine > theirs else { return arrival }
        return max(arrival, mine - theirs)
    }
}

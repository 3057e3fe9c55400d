// SPDX-License-Identifier: MIT
import MoqSync
public import MoqWire
import Synchronization

/// How a track ended.
public enum TrackEnd: Sendable, Equatable {
    /// No more groups will come; `end` is the first sequence never delivered.
    case finished(end: UInt64)
    /// The track failed (unknown track, publisher gone, session closed…).
    case aborted(StreamErrorCode)
}

/// Receives change notifications from a ``TrackProducer``.
///
/// `trackDidChange` runs on whichever thread changed the track, after the track's
/// lock is released. It must be cheap and must never block: typically it sets a
/// flag and hands work to a session thread.
public protocol TrackObserver: AnyObject, Sendable {
    /// The track gained a group, a frame, a status or its info changed.
    func trackDidChange()
}

/// A track: a sequence of groups of timestamped frames, written by one producer and
/// read by any number of observers (session subscriptions, local consumers, relays).
///
/// The track keeps its recent groups for the track's max age (always the latest
/// one), bounded by ``CacheLimits``, so late subscribers can start from the cache.
/// Thread-safe: writers and readers may be on any thread.
public final class TrackProducer: @unchecked Sendable {
    struct State {
        var info: TrackInfo?
        var groups: [GroupState] = []  // sorted by sequence
        var cachedBytes = 0
        /// Payload bytes of every frame appended (wrapping): what a player's path monitor counts.
        var payloadBytes: UInt64 = 0
        var latest: GroupState?
        var end: TrackEnd?
        var observers: [UInt64: any TrackObserver] = [:]
        var nextObserverID: UInt64 = 0
        var version: UInt64 = 0
        var groupsDropped: UInt64 = 0
        var unusedHandler: (@Sendable () -> Void)?
        var demandHandler: (@Sendable (SubscriptionRange?) -> Void)?
        var subscriptionStart: UInt64?
        var awaitingStart = false
        /// Dropped runs above the newest group when they were dropped, kept until newer groups
        /// arrive (at most ``maxDroppedAhead``).
        var droppedAhead: [(range: ClosedRange<UInt64>, code: StreamErrorCode)] = []
    }

    /// The track name within its broadcast.
    public let name: String
    /// The clock used for group ages.
    public let clock: any MoqClock
    /// The cache bounds.
    public let limits: CacheLimits
    let state: Lock<State>

    /// - Parameter info: nil while unknown (a relay waiting for TRACK_INFO upstream).
    public init(
        name: String, info: TrackInfo? = TrackInfo(), clock: any MoqClock = SystemClock(),
        limits: CacheLimits = CacheLimits()
    ) {
        self.name = name
        self.clock = clock
        self.limits = limits
        state = Lock(State(info: info))
    }

    deinit {
        let bytes = state.withLock { $0.cachedBytes }
        limits.budget?.add(-bytes)
    }

    // MARK: Writing

    /// Sets (or replaces) the track's info.
    public func setInfo(_ info: TrackInfo) {
        mutate { $0.info = info }
    }

    /// Starts the next group (latest + 1, or 0).
    public func appendGroup() -> GroupProducer {
        let group = mutate { s -> GroupState in
            if let latest = s.latest, latest.sequence >= VarInt.max {
                // No sequence is left: a closed group that takes no frames (2^62 groups in).
                let spent = GroupState(sequence: latest.sequence, createdAt: clock.now())
                spent.status = .aborted(.internal)
                return spent
            }
            let sequence = s.latest.map { $0.sequence + 1 } ?? 0
            return insert(&s, sequence: sequence)
        }
        return GroupProducer(track: self, group: group)
    }

    /// Creates the group with `sequence` (as received from a peer), or returns nil
    /// when it already exists or the track is closed.
    public func createGroup(sequence: UInt64) -> GroupProducer? {
        let group = mutate { s -> GroupState? in
            guard s.end == nil else { return nil }
            let i = index(s.groups, of: sequence)
            if i < s.groups.count, s.groups[i].sequence == sequence { return nil }
            if let latest = s.latest, latest.sequence == sequence { return nil }
            return insert(&s, sequence: sequence)
        }
        return group.map { GroupProducer(track: self, group: $0) }
    }

    /// Writes a group holding one frame and finishes it (audio packets, data lines).
    @discardableResult
    public func writeSingleFrameGroup(_ payload: Bytes, timestamp: UInt64) -> UInt64 {
        let group = appendGroup()
        group.write(payload, timestamp: timestamp)
        group.finish()
        return group.sequence
    }

    /// Writes a one-frame group that may be delivered as a QUIC DATAGRAM (unreliable,
    /// lowest latency) when the peer supports datagrams and it fits; otherwise it
    /// travels on a stream like any group.
    @discardableResult
    public func writeDatagram(_ payload: Bytes, timestamp: UInt64) -> UInt64 {
        let group = mutate { s -> GroupState in
            let sequence = s.latest.map { VarInt.saturatingAdd($0.sequence, 1) } ?? 0
            let g = insert(&s, sequence: sequence)
            g.isDatagram = true
            g.frames.append(Frame(timestamp: timestamp, payload: payload))
            g.noteFrame(timestampNs: Self.nanoseconds(timestamp, timescale: s.info?.timescale), arrivedAt: g.createdAt)
            g.byteCount = payload.count + Self.frameOverhead
            s.cachedBytes += g.byteCount
            limits.budget?.add(g.byteCount)
            g.status = .finished
            return g
        }
        return group.sequence
    }

    /// Stores a datagram received from a peer (ignored when that group already exists).
    public func receiveDatagram(sequence: UInt64, _ frame: Frame) -> Bool {
        guard let producer = createGroup(sequence: sequence) else { return false }
        mutate { _ in producer.group.isDatagram = true }
        producer.write(frame)
        producer.finish()
        return true
    }

    /// No more groups: subscribers get END once the open groups complete.
    public func finish() {
        mutate { s in
            guard s.end == nil else { return }
            s.end = .finished(end: s.latest.map { VarInt.saturatingAdd($0.sequence, 1) } ?? 0)
        }
    }

    /// No more groups after `end` (exclusive), as told by a publisher's SUBSCRIBE_END.
    public func finish(end: UInt64) {
        mutate { s in
            guard s.end == nil else { return }
            s.end = .finished(end: end)
        }
    }

    /// Ends the track abnormally; open groups are aborted with the same code.
    public func abort(_ code: StreamErrorCode) {
        mutate { s in
            guard s.end == nil else { return }
            s.end = .aborted(code)
            for g in s.groups where g.status == .open { g.status = .aborted(code) }
            if let l = s.latest, l.status == .open { l.status = .aborted(code) }
        }
    }

    /// Marks the track as fed by a subscription whose first group is not known yet
    /// (readers wait for it rather than starting at whichever group arrives first).
    public func expectSubscriptionStart() {
        mutate { $0.awaitingStart = true }
    }

    /// The first group of the subscription feeding this track (SUBSCRIBE_START).
    public func setSubscriptionStart(_ sequence: UInt64) {
        mutate { s in
            s.subscriptionStart = sequence
            s.awaitingStart = false
        }
    }

    /// Where readers of a subscribed track start, once known; and whether it is still awaited.
    public var subscriptionStart: (sequence: UInt64?, awaiting: Bool) {
        state.withLock { ($0.subscriptionStart, $0.awaitingStart) }
    }

    /// Records groups a publisher declared undeliverable (SUBSCRIBE_DROP): counted, and kept as
    /// empty aborted placeholders (for runs up to ``maxPlaceholders`` groups) so that readers
    /// do not wait for them. Groups below the newest get theirs at once. A run above the newest
    /// (a publisher serving a backlog newest first says what it drops before the groups after it
    /// arrive) is remembered, and its placeholders are made when a newer group arrives: a reader
    /// at the next sequence would otherwise wait its budget (or reorder window) for groups that
    /// are not coming. A run holding the subscription's first group moves it past the run.
    public func markDropped(_ range: ClosedRange<UInt64>, code: StreamErrorCode) {
        mutate { s in
            // Saturating: a DROP range may span the whole varint space.
            s.groupsDropped = VarInt.saturatingAdd(s.groupsDropped, range.upperBound - range.lowerBound)
            s.groupsDropped = VarInt.saturatingAdd(s.groupsDropped, 1)
            // A run holding the subscription's first group (a publisher that judged its first
            // groups too old at once, often before any group arrived): readers start after it
            // rather than wait for groups that are not coming.
            if let start = s.subscriptionStart, range.contains(start) {
                s.subscriptionStart = VarInt.saturatingAdd(range.upperBound, 1)
            }
            guard s.end == nil else { return }
            let newest = s.latest?.sequence
            if newest.map({ range.upperBound > $0 }) ?? true {
                let lower = newest.map { max(range.lowerBound, $0 + 1) } ?? range.lowerBound
                if s.droppedAhead.count < Self.maxDroppedAhead {
                    s.droppedAhead.append((lower...range.upperBound, code))
                }
            }
            if let newest, range.lowerBound < newest {
                addPlaceholders(&s, range.lowerBound...min(range.upperBound, newest - 1), code: code)
                evict(&s)
            }
        }
    }

    /// Empty aborted groups for the sequences of `range` that have none (nothing for a run of
    /// ``maxPlaceholders`` or more), merged into the cache in one pass.
    private func addPlaceholders(_ s: inout State, _ range: ClosedRange<UInt64>, code: StreamErrorCode) {
        guard range.upperBound - range.lowerBound < UInt64(Self.maxPlaceholders) else { return }
        var added: [GroupState] = []
        var i = index(s.groups, of: range.lowerBound)
        var sequence = range.lowerBound
        while sequence <= range.upperBound {
            while i < s.groups.count && s.groups[i].sequence < sequence { i += 1 }
            if !(i < s.groups.count && s.groups[i].sequence == sequence) {
                let g = GroupState(sequence: sequence, createdAt: clock.now())
                g.isCached = true
                g.status = .aborted(code)
                added.append(g)
            }
            sequence += 1
        }
        guard !added.isEmpty else { return }
        s.groups = Self.merged(s.groups, added)
    }

    /// Group `sequence` arrived: remembered dropped runs below it get their placeholders, and
    /// it leaves the run it was in.
    private func placeDroppedRuns(_ s: inout State, below sequence: UInt64) {
        guard !s.droppedAhead.isEmpty else { return }
        var kept: [(range: ClosedRange<UInt64>, code: StreamErrorCode)] = []
        for (range, code) in s.droppedAhead {
            guard range.lowerBound <= sequence else {
                kept.append((range, code))
                continue
            }
            if range.lowerBound < sequence {
                addPlaceholders(&s, range.lowerBound...min(range.upperBound, sequence - 1), code: code)
            }
            if range.upperBound > sequence { kept.append(((sequence + 1)...range.upperBound, code)) }
        }
        s.droppedAhead = kept
    }

    /// Dropped runs above the newest group remembered at once, at most (a peer's DROPs of future
    /// groups beyond it cost nothing, and their readers wait as before).
    package static let maxDroppedAhead = 16

    /// What a frame costs in the cache besides its payload (the `Frame` value and array slot).
    public static let frameOverhead = 48

    /// The most placeholders one SUBSCRIBE_DROP may create.
    static let maxPlaceholders = 1024

    /// Two sequence-sorted group lists as one (O(n + m)).
    private static func merged(_ a: [GroupState], _ b: [GroupState]) -> [GroupState] {
        var out: [GroupState] = []
        out.reserveCapacity(a.count + b.count)
        var i = 0
        var j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].sequence < b[j].sequence) {
                out.append(a[i])
                i += 1
            } else {
                out.append(b[j])
                j += 1
            }
        }
        return out
    }

    fileprivate func append(_ frame: Frame, to group: GroupState) -> Bool {
        mutate { s -> Bool in
            guard group.status == .open else { return false }
            if !group.isCached {
                // Evicted while still open: nobody new can find it, and what it would still
                // take is memory outside every bound. Readers holding it see EVICTED.
                group.status = .aborted(.evicted)
                return false
            }
            // Each frame costs its payload plus its bookkeeping: a flood of empty frames counts too.
            let cost = frame.payload.count + Self.frameOverhead
            guard group.byteCount + cost <= limits.maxGroupBytes else {
                group.status = .aborted(.groupTooLarge)
                return false
            }
            group.noteFrame(
                timestampNs: Self.nanoseconds(frame.timestamp, timescale: s.info?.timescale), arrivedAt: clock.now())
            group.frames.append(frame)
            s.payloadBytes &+= UInt64(frame.payload.count)
            group.byteCount += cost
            s.cachedBytes += cost
            limits.budget?.add(cost)
            evict(&s)
            return true
        }
    }

    /// A reader gives up the group with this sequence while it is still arriving: it is aborted
    /// (CANCEL), so that its next frame from the network stops its stream (STOP_SENDING) and the
    /// publisher sends no more of it. Frames already cached stay readable.
    public func abandon(sequence: UInt64) {
        guard let group = group(sequence: sequence) else { return }
        close(group, status: .aborted(.cancel))
    }

    fileprivate func close(_ group: GroupState, status: GroupStatus) {
        mutate { _ in
            if group.status == .open { group.status = status }
        }
    }

    // MARK: Reading

    /// The track's info, or nil while unknown.
    public var info: TrackInfo? { state.withLock { $0.info } }
    /// The newest group's sequence.
    public var latestSequence: UInt64? { state.withLock { $0.latest?.sequence } }
    /// How the track ended, or nil while live.
    public var end: TrackEnd? { state.withLock { $0.end } }
    /// Increments on every change.
    public var version: UInt64 { state.withLock { $0.version } }
    /// Groups declared undeliverable by the publisher.
    public var groupsDropped: UInt64 { state.withLock { $0.groupsDropped } }

    /// A consistent view of the track for readers: everything read under one lock.
    public struct Snapshot: Sendable {
        /// Cached groups with `sequence >= from`, oldest first.
        public let groups: [GroupState]
        /// The newest group.
        public let latest: GroupState?
        /// How the track ended, if it did.
        public let end: TrackEnd?
        /// The change counter at the time of the snapshot.
        public let version: UInt64
        /// The subscription's first group, if known; and whether it is still awaited.
        public let subscriptionStart: UInt64?
        public let awaitingStart: Bool
    }

    /// Groups from `from` on, with the rest of the track's state, atomically.
    public func snapshot(from: UInt64) -> Snapshot {
        state.withLock { s in
            let i = index(s.groups, of: from)
            return Snapshot(
                groups: Array(s.groups[i...]), latest: s.latest, end: s.end, version: s.version,
                subscriptionStart: s.subscriptionStart, awaitingStart: s.awaitingStart)
        }
    }

    /// The cached groups with `sequence >= from`, oldest first.
    public func groups(from: UInt64) -> [GroupState] {
        state.withLock { s in
            let i = index(s.groups, of: from)
            return Array(s.groups[i...])
        }
    }

    /// Payload bytes of every frame received on the track so far (wrapping at 2^64).
    public var payloadBytes: UInt64 { state.withLock { $0.payloadBytes } }

    /// The newest group (kept even when evicted from the cache by size).
    public var latestGroup: GroupState? { state.withLock { $0.latest } }

    /// The newest group's last frame, with the group, its frame count and when that frame arrived
    /// (the track's clock), read under one lock: the live edge as this track knows it.
    public var newestFrame: (group: GroupState, count: Int, frame: Frame, arrivalNs: UInt64)? {
        state.withLock { s in
            guard let group = s.latest, let frame = group.frames.last else { return nil }
            return (group, group.frames.count, frame, group.lastArrivalNs)
        }
    }

    /// The cached group with exactly this sequence.
    public func group(sequence: UInt64) -> GroupState? {
        state.withLock { s in
            let i = index(s.groups, of: sequence)
            return i < s.groups.count && s.groups[i].sequence == sequence ? s.groups[i] : nil
        }
    }

    /// The frames of `group` from `index` on, and its status, read atomically.
    public func frames(of group: GroupState, from index: Int) -> (frames: ArraySlice<Frame>, status: GroupStatus) {
        state.withLock { _ in (group.frames[min(index, group.frames.count)...], group.status) }
    }

    /// The number of frames written to `group` so far.
    public func frameCount(of group: GroupState) -> Int { state.withLock { _ in group.frames.count } }

    /// Registers an observer; keep the token to remove it.
    /// How many observers were ever added (readers and served subscriptions): grows by one with
    /// each, so a caller can tell whether the track was read since a moment it recorded.
    public var observersAdded: UInt64 { state.withLock { UInt64($0.nextObserverID) } }

    public func addObserver(_ observer: any TrackObserver) -> UInt64 {
        state.withLock { s in
            let id = s.nextObserverID
            s.nextObserverID += 1
            s.observers[id] = observer
            return id
        }
    }

    /// Removes an observer. When the last one goes, the unused handler runs (relays
    /// tear down their upstream subscription there).
    public func removeObserver(_ id: UInt64) {
        let handler = state.withLock { s -> (@Sendable () -> Void)? in
            guard s.observers.removeValue(forKey: id) != nil, s.observers.isEmpty else { return nil }
            return s.unusedHandler
        }
        handler?()
    }

    /// The number of registered observers.
    public var observerCount: Int { state.withLock { $0.observers.count } }

    /// Called (once per transition) when the last observer is removed.
    public func onUnused(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.unusedHandler = handler }
    }

    /// Called with the range of each subscription served from this track as it starts or
    /// changes: a relay subscribes upstream with what its subscribers ask for, and raises the
    /// budget when a later one asks for more.
    public func onDemand(_ handler: (@Sendable (SubscriptionRange?) -> Void)?) {
        state.withLock { $0.demandHandler = handler }
    }

    /// Reports a subscriber's range to the ``onDemand(_:)`` handler, if any.
    public func demand(_ range: SubscriptionRange?) {
        state.withLock { $0.demandHandler }?(range)
    }

    // MARK: Internals

    private func mutate<R>(_ body: (inout State) -> R) -> R {
        let (result, observers) = state.withLock { s -> (R, [any TrackObserver]) in
            let r = body(&s)
            s.version &+= 1
            return (r, Array(s.observers.values))
        }
        for o in observers { o.trackDidChange() }
        return result
    }

    private func insert(_ s: inout State, sequence: UInt64) -> GroupState {
        let g = GroupState(sequence: sequence, createdAt: clock.now())
        g.isCached = true
        let i = index(s.groups, of: sequence)
        s.groups.insert(g, at: i)
        if s.latest == nil || sequence > s.latest!.sequence { s.latest = g }
        placeDroppedRuns(&s, below: sequence)
        evict(&s)
        return g
    }

    /// Drops cached groups older than the max age (relative to the newest group) and
    /// beyond the byte and count bounds. The latest group always stays.
    private func evict(_ s: inout State) {
        guard let latest = s.latest else { return }
        var maxAgeMs = min(s.info?.maxAgeMs ?? 5000, limits.maxAgeMs ?? .max)
        if let retain = limits.retainAgeMs { maxAgeMs = max(maxAgeMs, retain) }
        let (product, overflow) = maxAgeMs.multipliedReportingOverflow(by: 1_000_000)
        let maxAgeNs = maxAgeMs >= (1 << 53) - 1 || overflow ? UInt64.max : product
        var removed = 0
        while removed < s.groups.count {
            let g = s.groups[removed]
            if g === latest { break }
            let tooOld = maxAgeNs != .max && latest.createdAt > g.createdAt && latest.createdAt - g.createdAt > maxAgeNs
            let tooMany = s.groups.count - removed > limits.maxGroups
            let tooBig = s.cachedBytes > limits.maxBytes || (limits.budget?.isOver ?? false)
            guard tooOld || tooMany || tooBig else { break }
            s.cachedBytes -= g.byteCount
            limits.budget?.add(-g.byteCount)
            g.isCached = false
            removed += 1
        }
        if removed > 0 { s.groups.removeFirst(removed) }
    }

    /// A timestamp in ns; nil for a timescale of 0 or an overflowing value.
    static func nanoseconds(_ timestamp: UInt64, timescale: UInt64?) -> UInt64? {
        let scale = timescale ?? 1_000_000
        guard scale > 0 else { return nil }
        let (whole, remainder) = timestamp.quotientAndRemainder(dividingBy: scale)
        let (ns, overflow) = whole.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        // remainder < scale; remainder × 10^9 / scale computed without overflow.
        let (high, low) = remainder.multipliedFullWidth(by: 1_000_000_000)
        let fraction = scale.dividingFullWidth((high, low)).quotient
        let (sum, overflowSum) = ns.addingReportingOverflow(fraction)
        return overflowSum ? nil : sum
    }

    private func index(_ groups: [GroupState], of sequence: UInt64) -> Int {
        var lo = 0
        var hi = groups.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if groups[mid].sequence < sequence { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// Writes frames into one group of a track.
public struct GroupProducer: Sendable {
    /// The track.
    public let track: TrackProducer
    /// The group.
    public let group: GroupState
    /// The group sequence.
    public var sequence: UInt64 { group.sequence }

    /// Appends a frame. Returns false when the group is no longer open.
    @discardableResult
    public func write(_ payload: Bytes, timestamp: UInt64) -> Bool {
        track.append(Frame(timestamp: timestamp, payload: payload), to: group)
    }

    /// Appends a decoded frame.
    @discardableResult
    public func write(_ frame: Frame) -> Bool { track.append(frame, to: group) }

    /// Completes the group.
    public func finish() { track.close(group, status: .finished) }

    /// Aborts the group; frames already written stay readable.
    public func abort(_ code: StreamErrorCode) { track.close(group, status: .aborted(code)) }

    /// The group's status (a write returned false: why).
    public var status: GroupStatus { track.frames(of: group, from: Int.max).status }
}

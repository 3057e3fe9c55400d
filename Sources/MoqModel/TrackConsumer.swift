// SPDX-License-Identifier: MIT
import MoqSync
public import MoqWire
import Synchronization

/// Why reading a track stopped early.
public enum TrackReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The track failed with this code (not found, unroutable, publisher gone…).
    case aborted(StreamErrorCode)
    /// The reader was cancelled.
    case cancelled

    public var description: String {
        switch self {
        case .aborted(let code): "track ended: \(code)"
        case .cancelled: "cancelled"
        }
    }
}

/// Wakes async readers when a track changes.
final class ChangeWaiter: TrackObserver, @unchecked Sendable {
    struct State {
        var continuation: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Lock(State())
    let track: TrackProducer

    init(track: TrackProducer) { self.track = track }

    func trackDidChange() {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Stops the reader for good: pending and later waits return at once.
    func cancel() {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.cancelled = true
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
    }

    /// Resumes a pending wait without changing anything (task cancellation, timeouts).
    func wake() {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
    }

    /// Returns once the track's version differs from `seen`, `deadline` (track clock ns)
    /// passes, or on cancellation. The deadline is a timer on `timers` (the session's
    /// scheduler: the event loop, or virtual time in tests), cancelled as soon as the wait
    /// ends, so that thousands of short waits leave nothing behind.
    func wait(since seen: UInt64, until deadline: UInt64, timers: any SessionScheduler) async {
        let now = track.clock.now()
        guard deadline > now else { return }
        let delay = Duration.nanoseconds(Int64(clamping: deadline - now))
        let timer = timers.schedule(after: delay) { [weak self] in self?.wake() }
        await wait(since: seen)
        timer.cancel()
    }

    /// Returns once the track's version differs from `seen`, or on cancellation.
    func wait(since seen: UInt64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.cancelled || track.version != seen { return true }
                    s.continuation = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            wake()
        }
    }
}

/// Reads a track group by group, in sequence order, applying a latency budget:
/// a group older than the newest by more than the budget is skipped (counted),
/// so a slow reader catches up at group boundaries instead of falling behind.
public final class TrackConsumer: @unchecked Sendable {
    /// The track read.
    public let track: TrackProducer
    /// The budget in ms; nil delivers every group.
    public let maxLatencyMs: UInt64?
    private let waiter: ChangeWaiter
    private let timers: (any SessionScheduler)?
    private let token: UInt64
    private let cursor = Lock<UInt64?>(nil)
    private let reorderWindowMs: UInt64?
    private let skipped = Atomic<UInt64>(0)

    /// - Parameters:
    ///   - startAt: the first sequence wanted; nil picks the oldest cached group
    ///     within the budget (the newest when the budget is 0).
    ///   - maxLatencyMs: the skipping budget; nil never skips.
    ///   - timers: what times ``nextGroup()``'s wait for a missing group (the session's
    ///     scheduler). Readers that only ``poll()`` pass nil; without it, an async read that
    ///     waits for a missing group looks again only when the track next changes.
    ///   - reorderWindowMs: how long a missing group is waited for once a later one arrived;
    ///     nil: the budget (or ``defaultReorderWindowMs`` without one). A deep budget (a
    ///     long-form player's) would otherwise wait that long for a group that is not coming.
    public init(
        track: TrackProducer, startAt: UInt64? = nil, maxLatencyMs: UInt64? = nil,
        timers: (any SessionScheduler)? = nil, reorderWindowMs: UInt64? = nil
    ) {
        self.track = track
        self.maxLatencyMs = maxLatencyMs
        self.reorderWindowMs = reorderWindowMs
        self.timers = timers
        waiter = ChangeWaiter(track: track)
        token = track.addObserver(waiter)
        cursor.withLock { $0 = startAt }
    }

    deinit { track.removeObserver(token) }

    /// Groups skipped as too late.
    public var groupsSkipped: UInt64 { skipped.load(ordering: .relaxed) }

    /// The outcome of a non-blocking read.
    public enum Poll: Sendable {
        /// The next group.
        case group(GroupConsumer)
        /// The track finished.
        case ended
        /// The track failed or the reader was cancelled.
        case failed(TrackReadError)
        /// Nothing yet: wait for a change after `version`, or until `deadline` (clock ns) passes.
        case wait(version: UInt64, deadline: UInt64?)
    }

    /// How long a missing group is waited for once a later one arrived, when no
    /// latency budget is set (groups travel on parallel streams and may arrive out of order).
    public static let defaultReorderWindowMs: UInt64 = 1000

    /// Reads without waiting. Groups come in sequence order; a missing group is
    /// waited for until a later group has been waiting for the budget (or the
    /// reorder window), then skipped. Groups older than the newest by more than
    /// the budget are skipped too.
    public func poll() -> Poll {
        if waiter.isCancelled { return .failed(.cancelled) }
        let budget = maxLatencyMs.map { $0 &* 1_000_000 }
        let gapWait = (reorderWindowMs ?? maxLatencyMs ?? Self.defaultReorderWindowMs) &* 1_000_000
        let now = track.clock.now()
        var deadline: UInt64?
        var version: UInt64 = 0
        var end: TrackEnd?
        let result = cursor.withLock { cursor -> GroupConsumer? in
            let snap = track.snapshot(from: cursor ?? 0)
            version = snap.version
            end = snap.end
            let ended = snap.end != nil
            guard let newest = snap.latest else { return nil }
            if cursor == nil {
                if let start = snap.subscriptionStart {
                    // A subscribed track starts where the publisher said (SUBSCRIBE_START),
                    // however its groups happen to arrive.
                    cursor = start
                } else if snap.awaitingStart && !ended && now < newest.createdAt &+ gapWait {
                    deadline = newest.createdAt &+ gapWait
                    return nil
                } else {
                    cursor = startSequence(snap.groups, newest: newest, budget: budget)
                }
            }
            for g in snap.groups where g.sequence >= cursor! {
                if g.sequence > cursor! && !ended {
                    // A gap: wait for the missing group unless this one has waited long enough.
                    let due = g.createdAt &+ gapWait
                    if now < due {
                        deadline = due
                        return nil
                    }
                    skipped.add(g.sequence - cursor!, ordering: .relaxed)
                }
                cursor = g.sequence + 1
                if let budget, g !== newest, newest.age(of: g) > budget {
                    skipped.add(1, ordering: .relaxed)
                    continue
                }
                if isPlaceholder(g) { continue }
                return GroupConsumer(track: track, group: g)
            }
            return nil
        }
        if let result { return .group(result) }
        if let deadline { return .wait(version: version, deadline: deadline) }
        switch end {
        case .aborted(let code)?: return .failed(.aborted(code))
        case .finished?: return .ended
        case nil: return .wait(version: version, deadline: nil)
        }
    }

    /// Groups a publisher declared undeliverable are kept as empty aborted placeholders.
    private func isPlaceholder(_ g: GroupState) -> Bool {
        if case .aborted = track.frames(of: g, from: 0).status, track.frameCount(of: g) == 0 { return true }
        return false
    }

    private func startSequence(_ groups: [GroupState], newest: GroupState, budget: UInt64?) -> UInt64 {
        guard let budget else { return groups.first?.sequence ?? newest.sequence }
        for g in groups where newest.age(of: g) <= budget {
            return g.sequence
        }
        return newest.sequence
    }

    /// The next group, waiting for it; nil when the track finished.
    public func nextGroup() async throws(TrackReadError) -> GroupConsumer? {
        while true {
            if Task.isCancelled { throw .cancelled }
            switch poll() {
            case .group(let g): return g
            case .ended: return nil
            case .failed(let e): throw e
            case .wait(let version, let deadline):
                if let deadline, let timers {
                    await waiter.wait(since: version, until: deadline, timers: timers)
                } else {
                    await waiter.wait(since: version)
                }
            }
        }
    }

    /// Every frame of every delivered group, in order, with its group sequence and index.
    /// A consumer is read by one task at a time.
    public func frames() -> AsyncThrowingStream<ReceivedFrame, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    while let group = try await self.nextGroup() {
                        var index = 0
                        while let frame = try await group.nextFrame() {
                            continuation.yield(ReceivedFrame(group: group.sequence, index: index, frame: frame))
                            index += 1
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Stops reading; pending waits return `.cancelled`.
    public func cancel() { waiter.cancel() }
}

/// A frame with its place in the track.
public struct ReceivedFrame: Sendable, Equatable {
    /// The group sequence.
    public var group: UInt64
    /// The index of the frame within the group (as delivered).
    public var index: Int
    /// The frame.
    public var frame: Frame
}

/// Reads the frames of one group as they arrive.
public final class GroupConsumer: @unchecked Sendable {
    /// The track.
    public let track: TrackProducer
    /// The group.
    public let group: GroupState
    private let waiter: ChangeWaiter
    private let token: UInt64
    private let next = Lock(0)

    init(track: TrackProducer, group: GroupState) {
        self.track = track
        self.group = group
        waiter = ChangeWaiter(track: track)
        token = track.addObserver(waiter)
    }

    deinit { track.removeObserver(token) }

    /// The group sequence.
    public var sequence: UInt64 { group.sequence }

    /// The outcome of a non-blocking read.
    public enum Poll: Sendable {
        case frame(Frame)
        case ended(GroupStatus)
        case wait(version: UInt64)
    }

    /// Reads without waiting.
    public func poll() -> Poll { pollWithArrival().poll }

    /// Reads without waiting; a frame that was the newest of its group when read comes with when
    /// it arrived (the track's clock), which a player measures lateness by.
    public func pollWithArrival() -> (poll: Poll, arrivalNs: UInt64?) {
        let version = track.version
        return next.withLock { i -> (Poll, UInt64?) in
            let (frames, status) = track.frames(of: group, from: i)
            if let f = frames.first {
                i += 1
                return (.frame(f), frames.count == 1 ? group.lastArrivalNs : nil)
            }
            return (status == .open ? .wait(version: version) : .ended(status), nil)
        }
    }

    /// The next frame, waiting for it; nil at the end of the group (finished or aborted).
    public func nextFrame() async throws(TrackReadError) -> Frame? {
        while true {
            switch poll() {
            case .frame(let f): return f
            case .ended: return nil
            case .wait(let version):
                if waiter.isCancelled { throw .cancelled }
                await waiter.wait(since: version)
                if Task.isCancelled { throw .cancelled }
            }
        }
    }

    /// How the group ended, or `.open`.
    public var status: GroupStatus { track.frames(of: group, from: Int.max).status }
}

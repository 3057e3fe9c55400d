// SPDX-License-Identifier: MIT
public import FoundationEssentials
import MoqSession
import MoqSync
import MoqWire
import SwiftMoQ

/// How a ``TrackSubscription`` delivers groups (moq-kit's `TrackDelivery`).
public enum TrackDelivery: Sendable, Equatable {
    /// Groups in increasing sequence; a group that arrives after a later one is skipped.
    case monotonic
    /// Frames as they arrive; group sequences may go backwards.
    case arrival
}

/// One object (frame) of a track.
public struct TrackObject: Sendable, Equatable {
    /// The frame's bytes.
    public let payload: Data
    /// The group's sequence.
    public let groupSequence: UInt64
    /// The frame's index in its group.
    public let objectIndex: UInt64
}

/// A subscription to one track of a broadcast (moq-kit's `TrackSubscription`).
///
/// From ``Broadcast/subscribeTrack(name:delivery:)`` it lives as long as that announcement;
/// from ``Session/subscribeTrack(broadcast:name:)`` it follows the track across reconnects,
/// relay restarts and GOAWAY handovers, and delivers each object once (``ResumePosition``).
public final class TrackSubscription: Sendable {
    /// The latency budget of the subscription (ms): groups up to this old are delivered (and a new
    /// subscriber first gets the cached ones this recent).
    public static let latencyBudgetMs: UInt64 = 10_000

    /// The track's objects; the stream ends when the track or the broadcast ends, or on ``close()``.
    public let objects: AsyncThrowingStream<TrackObject, any Error>

    private let remote = Lock<RemoteTrack?>(nil)
    private let task = Lock<Task<Void, Never>?>(nil)
    private let closeHandlers = Lock<[@Sendable () -> Void]>([])
    private let closed = Lock(false)
    private let continuation: AsyncThrowingStream<TrackObject, any Error>.Continuation

    private init() {
        (objects, continuation) = AsyncThrowingStream<TrackObject, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.maxBufferedObjects))
    }

    /// Data (chat, telemetry) should not be shed the way stale media is: a generous budget, so
    /// that a group still in flight when the next one is written is delivered, not dropped.
    private static let range = SubscriptionRange(priority: 0, maxLatencyMs: latencyBudgetMs)

    convenience init(session: MoqSession, broadcast: String, name: String, delivery: TrackDelivery) {
        self.init()
        let remote = session.subscribe(broadcast: broadcast, track: name, range: Self.range)
        self.remote.withLock { $0 = remote }
        let continuation = self.continuation
        start {
            do {
                switch delivery {
                case .monotonic:
                    let consumer = remote.consumer(maxLatencyMs: nil)
                    while let group = try await consumer.nextGroup() {
                        var index: UInt64 = 0
                        while let frame = try await group.nextFrame() {
                            try Self.deliver(Self.object(frame, group: group.sequence, index: index), to: continuation)
                            index += 1
                        }
                    }
                case .arrival:
                    try await Self.deliverByArrival(remote.track, into: continuation)
                }
                continuation.finish()
            } catch let error as MoqError {
                continuation.finish(throwing: error)
            } catch {
                if let reason = remote.error { continuation.finish(throwing: reason) } else { continuation.finish() }
            }
        }
    }

    /// Follows `name` of `broadcast` on every session `sessions` yields: subscribes whenever the
    /// broadcast is announced, and skips what a resubscription repeats.
    convenience init(following broadcast: String, name: String, sessions: AsyncStream<MoqSession>) {
        self.init()
        let continuation = self.continuation
        let current = self.remote
        start {
            // What a resubscription may repeat reaches back one budget from the newest group: a
            // frame older than that (in the track's timescale, µs unless TRACK_INFO says otherwise)
            // comes from a new timeline.
            func tolerance(_ remote: RemoteTrack?) -> UInt64 {
                let timescale = remote?.track.info?.timescale ?? 1_000_000
                let (ticks, overflow) = (TrackSubscription.latencyBudgetMs + 1000).multipliedReportingOverflow(
                    by: timescale)
                return overflow ? .max : ticks / 1000
            }
            var position = ResumePosition(timelineTolerance: tolerance(nil))
            do {
                for await moq in sessions {
                    // Within a session the broadcast may go and come back (its publisher reconnecting).
                    while moq.closeReason == nil, !Task.isCancelled {
                        guard (try? await moq.waitForBroadcast(broadcast, timeout: .seconds(3600))) != nil else {
                            break
                        }
                        let remote = moq.subscribe(broadcast: broadcast, track: name, range: Self.range)
                        current.withLock { $0 = remote }
                        position.timelineTolerance = tolerance(remote)
                        let consumer = remote.consumer(maxLatencyMs: nil)
                        do {
                            while let group = try await consumer.nextGroup() {
                                var index: UInt64 = 0
                                while let frame = try await group.nextFrame() {
                                    if position.admit(group: group.sequence, index: index, timestamp: frame.timestamp) {
                                        try Self.deliver(
                                            Self.object(frame, group: group.sequence, index: index), to: continuation)
                                    }
                                    index += 1
                                }
                            }
                            // The track finished: the publisher ended it.
                            continuation.finish()
                            return
                        } catch let error as TrackReadError {
                            if case .cancelled = error { return }
                            // The publisher, the relay or the path went away: the next announcement
                            // (on this session or the next one) resumes it.
                            remote.cancel()
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                    }
                    if Task.isCancelled { return }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    private func start(_ body: @escaping @Sendable () async -> Void) {
        let running = Task { await body() }
        task.withLock { $0 = running }
        continuation.onTermination = { [weak self] _ in self?.close() }
    }

    /// Ends the subscription.
    public func close() {
        guard
            !closed.withLock({ c in
                defer { c = true }; return c
            })
        else { return }
        task.withLock { $0 }?.cancel()
        remote.withLock { $0 }?.cancel()
        continuation.finish()
        for handler in closeHandlers.withLock({ $0 }) { handler() }
    }

    func onClose(_ handler: @escaping @Sendable () -> Void) {
        closeHandlers.withLock { $0.append(handler) }
    }

    /// Objects buffered for an application that has not read them. One that falls further
    /// behind gets an error instead of a process whose memory grows with the publisher's rate.
    public static let maxBufferedObjects = 4096

    private static func deliver(
        _ object: TrackObject, to continuation: AsyncThrowingStream<TrackObject, any Error>.Continuation
    ) throws(MoqError) {
        if case .dropped = continuation.yield(object) {
            throw .request(.tooFarBehind)
        }
    }

    private static func object(_ frame: Frame, group: UInt64, index: UInt64) -> TrackObject {
        TrackObject(
            payload: frame.payload.withUnsafeBytes { Data($0) }, groupSequence: group, objectIndex: index)
    }

    /// Every frame as it lands in the track, group by group in arrival order.
    private static func deliverByArrival(
        _ track: TrackProducer, into continuation: AsyncThrowingStream<TrackObject, any Error>.Continuation
    ) async throws {
        let changes = ChangeStream(track)
        var delivered: [UInt64: Int] = [:]
        while true {
            try Task.checkCancellation()
            let snapshot = track.snapshot(from: 0)
            for group in snapshot.groups.sorted(by: { $0.createdAt < $1.createdAt }) {
                let from = delivered[group.sequence] ?? 0
                let (frames, _) = track.frames(of: group, from: from)
                for (offset, frame) in frames.enumerated() {
                    try deliver(object(frame, group: group.sequence, index: UInt64(from + offset)), to: continuation)
                }
                delivered[group.sequence] = from + frames.count
            }
            // Forget groups the cache no longer holds (the map would grow with every group).
            if delivered.count > snapshot.groups.count {
                let cached = Set(snapshot.groups.map(\.sequence))
                delivered = delivered.filter { cached.contains($0.key) }
            }
            if snapshot.end != nil { return }
            await changes.next(after: snapshot.version)
        }
    }
}

/// Wakes an async reader when a track changes.
private final class ChangeStream: TrackObserver, Sendable {
    private let track: TrackProducer
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let token = Lock<UInt64?>(nil)

    init(_ track: TrackProducer) {
        self.track = track
        (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = track.addObserver(self)
        token.withLock { $0 = id }
    }

    deinit {
        if let id = token.withLock({ $0 }) { track.removeObserver(id) }
    }

    func trackDidChange() { continuation.yield() }

    /// Returns once the track's version moves past `version` (or the task is cancelled).
    func next(after version: UInt64) async {
        var iterator = stream.makeAsyncIterator()
        while track.version == version, !Task.isCancelled {
            _ = await iterator.next()
        }
    }
}

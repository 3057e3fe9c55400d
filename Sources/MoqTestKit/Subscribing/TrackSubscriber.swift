// SPDX-License-Identifier: MIT
import MoqCatalog
public import SwiftMoQ

/// A frame read from a track, with its legacy container (`varint(µs) + codec bytes`, what `moqsink`
/// writes) unwrapped.
public struct SubscribedFrame: Sendable, Equatable {
    /// The group's sequence number.
    public var group: UInt64
    /// The frame's index in its group.
    public var index: Int
    /// The frame's timestamp in µs: for `moqsink`, the buffer's running time.
    public var timestampMicros: UInt64
    /// The codec bytes (or the whole payload for a raw track).
    public var payload: [UInt8]
    /// hang's empty frame that closes a group.
    public var isEndOfGroup: Bool
}

/// Subscribes to one track through the SwiftMoQ API and hands its frames over one at a time.
///
/// ```swift
/// let reader = try await TrackSubscriber.subscribe(relay, broadcast: "room/cam", track: "0.avc1")
/// let frame = try await reader.next()
/// ```
public final class TrackSubscriber: Sendable {
    /// How frame payloads are read.
    public enum Container: Sendable {
        /// hang's legacy container: a varint timestamp, then the codec bytes (`moqsink` media tracks).
        case legacy
        /// As sent (`catalog.json`, `swiftmoq publish-track`).
        case raw
    }

    /// The subscriber's session.
    public let session: MoqSession
    private let remote: RemoteTrack
    private let frames = AsyncQueue<SubscribedFrame>()
    private let reading: Task<Void, Never>

    private init(session: MoqSession, remote: RemoteTrack, maxLatencyMs: UInt64, container: Container) {
        self.session = session
        self.remote = remote
        let consumer = remote.consumer(maxLatencyMs: maxLatencyMs)
        let queue = frames
        reading = Task {
            do {
                while let group = try await consumer.nextGroup() {
                    var index = 0
                    while let frame = try await group.nextFrame() {
                        queue.push(Self.media(frame, group: group.sequence, index: index, container: container))
                        index += 1
                    }
                }
                queue.finish()
            } catch {
                queue.finish(.failure(.subscription("\(error)")))
            }
        }
    }

    /// Connects to `relay` (through `proxy` when given), waits until `broadcast` is announced and has
    /// `track` (a publisher announces before its tracks exist: `moqsink` adds one per pad once caps are
    /// known), and subscribes to it.
    ///
    /// - Parameters:
    ///   - maxLatency: the subscription's latency budget: older groups are skipped.
    ///   - waitForTrack: how long the broadcast and track may take to appear.
    /// - Throws: ``TestKitError/subscription(_:)`` when connecting fails or the track does not appear.
    public static func subscribe(
        _ relay: TestRelay, broadcast: String, track: String, via proxy: UDPProxy? = nil,
        maxLatency: Duration = .seconds(10), container: Container = .legacy, waitForTrack: Duration = .seconds(10)
    ) async throws(TestKitError) -> TrackSubscriber {
        let deadline = ContinuousClock.now + waitForTrack
        let session: MoqSession
        do {
            session = try await relay.connect(via: proxy)
            try await session.waitForBroadcast(broadcast, timeout: waitForTrack)
        } catch {
            throw .subscription("\(broadcast): \(error)")
        }
        while true {
            do {
                _ = try await session.trackInfo(broadcast: broadcast, track: track)
                break
            } catch {
                guard ContinuousClock.now < deadline else {
                    session.close()
                    throw .subscription("\(broadcast)/\(track) did not appear: \(error)")
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let budget =
            UInt64(maxLatency.components.seconds) * 1000
            + UInt64(maxLatency.components.attoseconds / 1_000_000_000_000_000)
        let remote = session.subscribe(
            broadcast: broadcast, track: track, range: SubscriptionRange(maxLatencyMs: budget))
        return TrackSubscriber(session: session, remote: remote, maxLatencyMs: budget, container: container)
    }

    /// The next frame; nil when the track ended.
    ///
    /// - Throws: ``TestKitError/timedOut(_:)``, or ``TestKitError/subscription(_:)`` when the track ended
    ///   with an error.
    public func next(timeout: Duration = .seconds(10)) async throws(TestKitError) -> SubscribedFrame? {
        try await frames.next(timeout: timeout, what: "a frame of \(remote.broadcast)/\(remote.track.name)")
    }

    /// Reads frames until one satisfies `match` (returned), skipping the others.
    public func next(
        timeout: Duration = .seconds(10), where match: (SubscribedFrame) -> Bool
    ) async throws(TestKitError) -> SubscribedFrame {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero, let frame = try await next(timeout: left) else {
                throw .timedOut("a matching frame of \(remote.broadcast)/\(remote.track.name)")
            }
            if match(frame) { return frame }
        }
    }

    /// Cancels the subscription and closes the session.
    public func close() {
        reading.cancel()
        remote.cancel()
        session.close()
    }

    deinit { close() }

    private static func media(_ frame: Frame, group: UInt64, index: Int, container: Container) -> SubscribedFrame {
        if case .legacy = container, let legacy = try? LegacyFrame(decoding: frame.payload) {
            return SubscribedFrame(
                group: group, index: index, timestampMicros: frame.timestamp, payload: legacy.payload.array,
                isEndOfGroup: legacy.isEndOfGroup)
        }
        return SubscribedFrame(
            group: group, index: index, timestampMicros: frame.timestamp, payload: frame.payload.array,
            isEndOfGroup: frame.payload.isEmpty)
    }
}

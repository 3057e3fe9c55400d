// SPDX-License-Identifier: MIT
import MoqSync
package import SwiftMoQ

/// A publisher writing groups of `frames` frames `interval` apart into `track` until cancelled;
/// frame payloads are `g{group}f{index}`.
package final class GroupedPublisher: Sendable {
    let task: Task<Void, Never>
    /// The track written into.
    package let track: TrackProducer

    package init(_ track: TrackProducer, frames: Int = 5, interval: Duration = .milliseconds(20)) {
        self.track = track
        task = Task {
            var frame: UInt64 = 0
            while !Task.isCancelled {
                let group = track.appendGroup()
                for i in 0..<frames {
                    group.write(Bytes(utf8: "g\(group.sequence)f\(i)"), timestamp: frame * 20_000)
                    frame += 1
                    try? await Task.sleep(for: interval)
                }
                group.finish()
            }
        }
    }

    /// Publishes `broadcast` on `session` with one track, `name`, and writes into it.
    package convenience init(
        publishing broadcast: String, on session: MoqSession, track name: String = "data", frames: Int = 5,
        interval: Duration = .milliseconds(20)
    ) {
        let producer = BroadcastProducer(path: broadcast)
        let track = producer.createTrack(name)
        session.publish(producer)  // the session's origin keeps the broadcast
        self.init(track, frames: frames, interval: interval)
    }

    package func cancel() { task.cancel() }
}

/// What one subscriber received: the groups that arrived whole (`frames` frames), in arrival
/// order, and how its track ended (nil while it goes on).
package final class GroupTally: Sendable {
    private let whole = Lock<[UInt64]>([])
    private let end = Lock<String?>(nil)
    private let task: Task<Void, Never>

    package init(_ remote: RemoteTrack, frames: Int = 5, maxLatencyMs: UInt64 = 2_000) {
        let consumer = remote.consumer(maxLatencyMs: maxLatencyMs)
        let whole = self.whole
        let end = self.end
        task = Task {
            do {
                while let group = try await consumer.nextGroup() {
                    var count = 0
                    while try await group.nextFrame() != nil { count += 1 }
                    if count == frames { whole.withLock { $0.append(group.sequence) } }
                }
                end.withLock { $0 = "finished" }
            } catch {
                end.withLock { $0 = "\(error)" }
            }
        }
    }

    /// The whole groups so far, in arrival order.
    package var groups: [UInt64] { whole.withLock { $0 } }
    /// How the track ended, nil while it goes on.
    package var ended: String? { end.withLock { $0 } }

    package func cancel() { task.cancel() }
}

/// `count` viewers of `broadcast`/`track`, each a session of its own from `connect`, each counted by a
/// ``GroupTally`` (latency budget 2 s unless given).
package func watch(
    _ broadcast: String, track: String, viewers count: Int, maxLatencyMs: UInt64 = 2_000,
    connect: () async throws -> MoqSession
) async throws -> (sessions: [MoqSession], tallies: [GroupTally]) {
    var sessions: [MoqSession] = []
    var tallies: [GroupTally] = []
    for _ in 0..<count {
        let viewer = try await connect()
        try await viewer.waitForBroadcast(broadcast)
        sessions.append(viewer)
        let remote = viewer.subscribe(
            broadcast: broadcast, track: track, range: SubscriptionRange(maxLatencyMs: maxLatencyMs))
        tallies.append(GroupTally(remote, maxLatencyMs: maxLatencyMs))
    }
    return (sessions, tallies)
}

// SPDX-License-Identifier: MIT
import MoqTestKit
import SwiftMoQ

/// A publisher session publishing `broadcast` with a track `name`, and a subscriber session subscribed
/// to it, both pinned clients of `relay` (the subscription may not have reached the publisher yet).
/// The caller keeps `broadcast`, as an application does: a publisher's session that closes does not
/// end the broadcast its application still holds.
func relayedTrack(
    _ relay: MoqRelay, publishing broadcast: BroadcastProducer, track name: String = "video",
    info: TrackInfo = TrackInfo(), maxLatencyMs: UInt64
) async throws -> (publisher: MoqSession, subscriber: MoqSession, track: TrackProducer, remote: RemoteTrack) {
    let publisher = try await relay.connectClient()
    let subscriber = try await relay.connectClient()
    let track = broadcast.createTrack(name, info: info)
    publisher.publish(broadcast)
    try await subscriber.waitForBroadcast(broadcast.path)
    let remote = subscriber.subscribe(
        broadcast: broadcast.path, track: name, range: SubscriptionRange(maxLatencyMs: maxLatencyMs))
    return (publisher, subscriber, track, remote)
}

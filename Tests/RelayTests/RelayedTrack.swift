// SPDX-License-Identifier: MIT
import MoqTestKit
import SwiftMoQ

/// A publisher session writing track `name` of `broadcast` and a subscriber session subscribed to
/// it, both pinned clients of `relay` (the subscription may not have reached the publisher yet).
func relayedTrack(
    _ relay: MoqRelay, broadcast: String = "cam", track name: String = "video", info: TrackInfo = TrackInfo(),
    maxLatencyMs: UInt64
) async throws -> (publisher: MoqSession, subscriber: MoqSession, track: TrackProducer, remote: RemoteTrack) {
    let publisher = try await relay.connectClient()
    let subscriber = try await relay.connectClient()
    let producer = BroadcastProducer(path: broadcast)
    let track = producer.createTrack(name, info: info)
    publisher.publish(producer)  // the session's origin keeps the broadcast
    try await subscriber.waitForBroadcast(broadcast)
    let remote = subscriber.subscribe(
        broadcast: broadcast, track: name, range: SubscriptionRange(maxLatencyMs: maxLatencyMs))
    return (publisher, subscriber, track, remote)
}

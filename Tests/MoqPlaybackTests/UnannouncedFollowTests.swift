// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqModel
import MoqPlayback
import MoqWire
import SwiftMoQ
import Testing

/// Following an exact broadcast over MoQ Transport on a relay that routes subscriptions without
/// announcing what it routes (Cloudflare's): the catalog is subscribed by name.
@Suite("BroadcastFollower over MoQ Transport without announcements", .timeLimit(.minutes(1)))
struct UnannouncedFollowTests {
    @Test(
        "an IETF server that lists no namespaces: an exact broadcast is found by its catalog and ends with it, a missing one is reported not found (and nothing before)"
    )
    func unannounced() async throws {
        let origin = Origin()
        let server = try IETFServer.listen(origin: origin, listsNamespaces: false)
        defer { server.close() }
        var catalog = HangCatalog()
        catalog.set("video", .video(VideoConfig(codec: "avc3.64001f")))
        let broadcast = BroadcastProducer(path: "room/cam")
        let catalogTrack = broadcast.createTrack(HangCatalog.trackName)
        _ = catalogTrack.writeSingleFrameGroup(Bytes(catalog.jsonBytes()), timestamp: 0)
        origin.publish(broadcast)
        var options = ClientOptions(tls: TLSOptions(fingerprint: server.fingerprint))
        options.moqProtocol = .ietf
        let session = try await MoqSession.connect(MoqURL("moql://127.0.0.1:\(server.port)/anon"), options: options)
        defer { session.close() }

        // Found with its first catalog; ended with its catalog track (no announcement will say it).
        var events: [FollowEvent] = []
        for await event in BroadcastFollower.follow(session, target: .exact("room/cam"), timeout: .seconds(20)) {
            events.append(event)
            if case .catalog = event { catalogTrack.finish() }
            if case .ended = event { break }
        }
        #expect(events == [.found(path: "room/cam"), .catalog(path: "room/cam", catalog), .ended(path: "room/cam")])
        // Subscriptions to a broadcast nobody publishes fail quietly (it may not be up yet) until the timeout.
        let missing = await Self.follow(session, .exact("room/none"), timeout: .seconds(1)) {
            if case .notFound = $0 { true } else { false }
        }
        #expect(missing == [.notFound(.exact("room/none"))])
        #expect(session.closeReason == nil)
    }

    /// The follow's events up to the first that `last` accepts.
    static func follow(
        _ session: MoqSession, _ target: BroadcastTarget, timeout: Duration, until last: (FollowEvent) -> Bool
    ) async -> [FollowEvent] {
        var events: [FollowEvent] = []
        for await event in BroadcastFollower.follow(session, target: target, timeout: timeout) {
            events.append(event)
            if last(event) { break }
        }
        return events
    }
}

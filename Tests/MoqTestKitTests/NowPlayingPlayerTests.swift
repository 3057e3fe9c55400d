// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqKit
import MoqPipeline
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

@Suite("MoqKit Player: now playing", .serialized, .timeLimit(.minutes(2)))
struct NowPlayingPlayerTests {
    @Test("Player.nowPlaying follows the publisher's tags, with a nowPlaying event each time")
    func followsTags() async throws {
        try await withTestRelay() { (relay) async throws in
            let radio = try await TaggedRadio.start(
                relay, tags: "title=\"First Song\",artist=Someone,duration=(guint64)215000000000")
            defer { radio.publisher.stop() }
            let (publisher, viewer, catalog) = (radio.publisher, radio.viewer, radio.catalog)
            let player = try Player(catalog: catalog, output: .headless)
            let titles = Lock<[String]>([])
            let events = player.subscribeEvents()
            let watcher = Task {
                for await event in events where event.name == .nowPlaying {
                    titles.withLock { $0.append(event.fields["title"]?.stringValue ?? "") }
                }
            }
            defer { watcher.cancel() }
            try await player.play()
            try await eventually("the first title", timeout: .seconds(20)) { player.nowPlaying?.title == "First Song" }
            #expect(player.nowPlaying?.artist == "Someone")
            #expect(player.nowPlaying?.durationMs == 215_000)
            try publisher.element(named: "tags").set("tags", "title=\"Second Song\",artist=Someone")
            try await eventually("the second title", timeout: .seconds(10)) {
                player.nowPlaying?.title == "Second Song"
            }
            // The events reach the watcher task asynchronously: the property can change before its event is read.
            try await eventually("a nowPlaying event for each title", timeout: .seconds(10)) {
                titles.withLock { $0.contains("First Song") && $0.contains("Second Song") }
            }
            await player.stop()
            await viewer.close()
        }
    }
}

/// A tone published as `radio` through moqsink with its tags from a `taginject` named `tags`, and
/// its playable catalog as a MoqKit Session sees it.
struct TaggedRadio {
    let publisher: Pipeline
    let viewer: Session
    let catalog: MoqKit.Catalog

    static func start(_ relay: TestRelay, tags: String) async throws -> TaggedRadio {
        SwiftMoQElements.register()
        let publisher = Pipeline(
            launch: "audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=1 "
                + "! taginject name=tags tags=\"\(tags.replacingOccurrences(of: "\"", with: "\\\""))\" "
                + "! opusenc ! moqsink \(relay.moqsinkProperties(broadcast: "radio"))")
        try publisher.start()
        let viewer = Session(url: relay.url(), options: SessionOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
        do {
            try await viewer.connect()
            let catalog = try await viewer.firstCatalog { !$0.playableAudioTracks.isEmpty }.catalog
            return TaggedRadio(publisher: publisher, viewer: viewer, catalog: catalog)
        } catch {
            publisher.stop()
            throw error
        }
    }
}

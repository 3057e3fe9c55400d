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
        let relay = try TestRelay.start()
        defer { Task { await relay.stop() } }
        SwiftMoQElements.register()
        let publisher = Pipeline(
            launch: "audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=1 "
                + "! taginject name=tags tags=\"title=\\\"First Song\\\",artist=Someone,duration=(guint64)215000000000\" "
                + "! opusenc ! moqsink \(relay.moqsinkProperties(broadcast: "radio"))")
        try publisher.start()
        defer { publisher.stop() }
        let viewer = Session(url: relay.url(), options: SessionOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
        try await viewer.connect()
        let subscription = try await viewer.subscribe(prefix: "")
        var broadcasts = subscription.broadcasts.makeAsyncIterator()
        let broadcast = try #require(await broadcasts.next())
        var catalogs = broadcast.catalogs().makeAsyncIterator()
        var catalog = try #require(await catalogs.next())
        while catalog.playableAudioTracks.isEmpty { catalog = try #require(await catalogs.next()) }
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
        try await eventually("the second title", timeout: .seconds(10)) { player.nowPlaying?.title == "Second Song" }
        let seen = titles.withLock { $0 }
        #expect(seen.contains("First Song") && seen.contains("Second Song"), "\(seen)")
        await player.stop()
        await viewer.close()
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// pipelines/camera-ladder.pipeline (a test source standing in for the camera, smaller sizes so
/// that three encoders fit on two cores) through moq-dev's relay: moq-dev's own player reads the
/// three renditions as ordinary ones, and moqsrc plays the top one adaptively.
@Suite("a ladder with moq-dev's relay and player", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct LadderInteropTests {
    static func publisher(_ relay: RustRelay, broadcast: String) throws -> TestPipeline {
        var text = try Recipe.text(
            "camera-ladder",
            [
                "MOQ_URL": relay.url(), "MOQ_BROADCAST": broadcast, "MOQ_TLS": "tls-fingerprint=\(relay.fingerprint)",
                "CAMERA": "cam",
            ])
        text = text.replacingOccurrences(of: "v4l2src device=cam", with: "videotestsrc is-live=true")
        text = text.replacingOccurrences(of: "alsasrc", with: "audiotestsrc is-live=true")
        text = text.replacingOccurrences(of: "speed-preset=veryfast", with: "speed-preset=ultrafast")
        // Smallest first: the source's new size is the top rung's old one.
        for (from, to) in [
            ("width=320,height=180", "width=160,height=90"), ("width=640,height=360", "width=240,height=136"),
            ("width=1280,height=720", "width=320,height=180"),
        ] {
            text = text.replacingOccurrences(of: from, with: to)
        }
        return try TestPipeline(text)
    }

    /// Reads the broadcast's catalog through the relay until it names every one of `names`.
    static func waitForRenditions(_ names: [String], of broadcast: String, at relay: RustRelay) async throws {
        let session = try await relay.connect()
        defer { session.close() }
        try await session.waitForBroadcast(broadcast, timeout: .seconds(30))
        let track = session.subscribe(broadcast: broadcast, track: HangCatalog.trackName)
        let consumer = track.consumer(maxLatencyMs: 0)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, let group = try await consumer.nextGroup() {
            guard let frame = try await group.nextFrame() else { continue }
            let catalog = try HangCatalog(json: frame.payload.array)
            if Set(names).isSubset(of: Set(catalog.renditions.map(\.name))) { return }
        }
        Issue.record("the catalog never named \(names)")
    }

    @Test("moq-dev's player reads three ordinary renditions, with their sizes and bitrates, and decodes each")
    func rustPlayerReadsTheLadder() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("ladder")
        let publisher = try Self.publisher(relay, broadcast: name)
        #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
        defer { publisher.setState(GST_STATE_NULL) }
        // moq-dev's player follows the first catalog it reads, and moqsink adds each rendition once its
        // encoder has caps: under ThreadSanitizer the first catalog lacked one. Start it once all three are in.
        try await Self.waitForRenditions(["720p", "360p", "180p"], of: name, at: relay)
        let watcher = try RustPeer.launch(
            ["watch"] + relay.client + ["--broadcast", name, "--seconds", "10", "--frames", "180"])
        defer { watcher.terminateInBackground() }
        let catalog = try await watcher.waitFor(event: "catalog", timeout: .seconds(30))
        let events = try await watcher.collect(until: "summary", timeout: .seconds(40))
        for track in ["720p", "360p", "180p"] {
            #expect(catalog.line.contains("\"\(track)\""), "\(catalog)")
            #expect(events.contains { $0.string("track") == track && $0.name == "video" }, "\(track) decoded")
        }
        // (The snapshot it prints is its first: the bitrates, which come with the encoders' tags, may not
        // be in it yet; LadderPublishingElementTests reads them.)
        #expect(catalog.line.contains("\"codedWidth\":160"), "\(catalog)")
        let summary = try #require(events.last)
        #expect(summary.int("errors") == 0, "\(summary)")
    }

    @Test("moqsrc through moq-dev's relay plays the top rendition of the ladder, adaptively")
    func moqsrcThroughRustRelay() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("ladder-play")
        let publisher = try Self.publisher(relay, broadcast: name)
        #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
        defer { publisher.setState(GST_STATE_NULL) }
        let player = try TestPipeline(
            "moqsrc name=src url=\(relay.url()) broadcast=\(name) tls-fingerprint=\(relay.fingerprint) "
                + "src.video_0 ! queue ! decodebin ! fakesink sync=true src.audio_0 ! queue ! fakesink sync=true")
        #expect(player.play() != GST_STATE_CHANGE_FAILURE)
        defer { player.setState(GST_STATE_NULL) }
        let src = player.element("src")!
        defer { gst_object_unref(src) }
        try await eventually(
            "60 frames of 720p", timeout: .seconds(30), detail: { stringProperty(src, "stats") ?? "" }
        ) {
            (statsField(src, "video-frames") ?? 0) >= 60
                && (stringProperty(src, "stats") ?? "").contains("video-track=(string)720p")
        }
        let stats = stringProperty(src, "stats") ?? ""
        #expect(stats.contains("abr=(boolean)true"), "\(stats)")
        #expect(player.errors.isEmpty, "\(player.errors)")
    }
}

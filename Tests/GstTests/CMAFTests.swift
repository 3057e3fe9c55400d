// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// Fragmented MP4 (CMAF) through moqsink and moqsrc, with moq-dev's Rust peer on the other side.
/// Debian has no `isofmp4mux`/`cmafmux` (gst-plugins-rs): `mp4mux fragment-duration=…` makes
/// the same ftyp + moov, then moof + mdat stream.
@Suite(
    "CMAF: fragmented MP4 in moqsink, played by moqsrc and by moq-dev's peer", .serialized, .timeLimit(.minutes(3)),
    .peersStopped)
struct CMAFTests {
    /// H.264 and Opus muxed into fragmented MP4, one fragment per video frame.
    static func fragmentedMP4(frames: Int) -> String {
        "mp4mux name=mux fragment-duration=33 streamable=true "
            + "videotestsrc is-live=true pattern=ball num-buffers=\(frames) ! "
            + "video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! "
            + "x264enc tune=zerolatency key-int-max=30 ! video/x-h264,profile=constrained-baseline ! h264parse ! mux. "
            + "audiotestsrc is-live=true num-buffers=\(frames * 5 / 3) samplesperbuffer=960 ! "
            + "audio/x-raw,rate=48000,channels=2 ! opusenc ! mux. "
    }

    @Test(
        "mp4mux (fragmented) ! moqsink → Rust relay → moq-dev's decoder: catalog cmaf with an init segment, 150 video frames decode"
    )
    func swiftCMAFToRustDecoder() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("cmaf")
        let watcher = try RustPeer.launch(
            ["watch"] + relay.client + ["--broadcast", name, "--seconds", "12", "--frames", "150"])
        defer { watcher.terminateInBackground() }
        let gst = try PluginFile.launch(
            Self.fragmentedMP4(frames: 180) + "mux. ! moqsink url=\(relay.url()) broadcast=\(name) "
                + "tls-fingerprint=\(relay.fingerprint)")
        defer { if gst.isRunning { gst.terminate() } }
        let catalog = try await watcher.waitFor(event: "catalog", timeout: .seconds(30))
        let summary = try await watcher.waitFor(event: "summary", timeout: .seconds(40))
        // One track per MP4 track, each with its own init segment, as moq-dev's fMP4 importer does.
        #expect(catalog.line.contains("\"kind\":\"cmaf\"") && catalog.line.contains("\"init\""), "\(catalog.line)")
        #expect(catalog.line.contains("avc1.42") && catalog.line.contains("\"opus\""), "\(catalog.line)")
        #expect((summary.int("video_frames") ?? 0) >= 150, "\(summary)")
        #expect((summary.int("audio_frames") ?? 0) >= 100, "\(summary)")
        #expect(summary.int("errors") == 0, "\(summary)")
    }

    @Test("mp4mux (fragmented) ! moqsink → moqsrc ! decodebin: both tracks decode, timestamps monotonic")
    func swiftCMAFToMoqsrc() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let name = "cmaf-\(UInt32.random(in: 0...UInt32.max))"
            let publisher = try TestPipeline(
                Self.fragmentedMP4(frames: 100_000)
                    + "mux. ! moqsink name=sink \(relay.elementProperties) broadcast=\(name)")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=\(name) "
                    + "s.video_0 ! decodebin ! video/x-raw ! appsink name=v sync=false "
                    + "s.audio_0 ! decodebin ! audio/x-raw ! appsink name=a sync=false")
            let video = try player.record("v")
            let audio = try player.record("a")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            defer {
                video.stop()
                audio.stop()
            }
            try await eventually("60 video frames and 100 audio buffers decoded", timeout: .seconds(20)) {
                video.count >= 60 && audio.count >= 100
            }
            #expect(isMonotonic(video.entries), "video timestamps go backwards")
            #expect(isMonotonic(audio.entries), "audio timestamps go backwards")
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
            let sink = publisher.element("sink")
            defer { sink.map { gst_object_unref($0) } }
            #expect(sink.flatMap { stringProperty($0, "stats") }?.contains("frames") == true)
        }
    }

    @Test("moq-dev's fMP4 importer (CMAF tracks) → Rust relay → moqsrc ! decodebin: frames decode")
    func rustCMAFToMoqsrc() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-cmaf-\(getpid()).mp4")
        defer { try? FileManager.default.removeItem(at: file) }
        let mux = try PluginFile.launch(
            "mp4mux name=mux fragment-duration=33 streamable=true "
                + "videotestsrc num-buffers=120 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! "
                + "x264enc tune=zerolatency key-int-max=30 ! video/x-h264,profile=constrained-baseline ! h264parse ! mux. "
                + "mux. ! filesink location=\(file.path)")
        let muxed = Handed(mux)
        try await offThePool { muxed.value.waitUntilExit() }
        try #require(mux.terminationStatus == 0, "gst-launch could not write \(file.path)")

        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("fmp4")
        let publisher = try RustPeer.launch(
            ["publish-fmp4"] + relay.client + ["--broadcast", name, "--file", file.path, "--interval-ms", "33"])
        defer { publisher.terminateInBackground() }
        _ = try await publisher.waitFor(event: "announced", timeout: .seconds(20))
        let player = try TestPipeline(
            "moqsrc name=s url=\(relay.url()) broadcast=\(name) tls-fingerprint=\(relay.fingerprint) latency=300 "
                + "s.video_0 ! decodebin ! video/x-raw ! appsink name=v sync=false")
        let video = try player.record("v")
        #expect(player.play() != GST_STATE_CHANGE_FAILURE)
        defer { player.setState(GST_STATE_NULL) }
        defer { video.stop() }
        try await eventually("60 frames of moq-dev's CMAF decoded", timeout: .seconds(20)) { video.count >= 60 }
        #expect(isMonotonic(video.entries), "timestamps go backwards")
        #expect(player.errors.isEmpty, "\(player.errors)")
    }

    /// A box: 32-bit size, type, body.
    static func box(_ type: String, _ body: [UInt8] = []) -> [UInt8] {
        let size = UInt32(8 + body.count)
        return withUnsafeBytes(of: size.bigEndian, Array.init) + Array(type.utf8) + body
    }

    @Test(
        "malformed fragmented MP4 into moqsink: an ERROR that names the pad and what is wrong, no crash",
        arguments: [
            (
                Self.box("ftyp", Array("isom".utf8) + [0, 0, 0, 0]) + [0, 0, 0, 4] + Array("moov".utf8),
                "a moov box of 4 bytes cannot hold its header"
            ),
            ([0, 0, 0, 0] + Array("ftyp".utf8), "a ftyp box of size 0"),
            ([0, 0, 0, 1] + Array("mdat".utf8) + [UInt8](repeating: 0xff, count: 8), "larger than 256 MiB"),
            (Self.box("moof") + Self.box("free"), "a moof not followed by its mdat"),
            (
                Self.box("ftyp", Array("isom".utf8) + [0, 0, 0, 0]) + Self.box("moov", Array("not a box".utf8)),
                "fragmented MP4 input"
            ),
        ] as [([UInt8], String)])
    func malformedInput(bytes: [UInt8], expected: String) async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let pipeline = try TestPipeline(
                "appsrc name=src is-live=true format=time caps=video/quicktime,variant=iso-fragmented "
                    + "! moqsink name=m \(relay.elementProperties) broadcast=bad-mp4")
            #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
            defer { pipeline.setState(GST_STATE_NULL) }
            try? AppSource(pipeline.base, name: "src").push(bytes)  // the ERROR is what counts
            let error = try await pipeline.waitFor { $0.isError }
            #expect(
                error.text?.contains("sink_0: fragmented MP4 input") == true && error.text?.contains(expected) == true,
                "\(error.text ?? "")")
            // The relay is unaffected: a new session still connects to it.
            let probe = try TestPipeline(
                "videotestsrc is-live=true num-buffers=5 ! x264enc tune=zerolatency ! h264parse "
                    + "! moqsink name=ok \(relay.elementProperties) broadcast=good")
            #expect(probe.play() != GST_STATE_CHANGE_FAILURE)
            defer { probe.setState(GST_STATE_NULL) }
            let sink = probe.element("ok")!
            defer { gst_object_unref(sink) }
            try await eventually("the other publisher connected") { stringProperty(sink, "status") == "connected" }
            #expect(probe.errors.isEmpty, "\(probe.errors)")
        }
    }
}

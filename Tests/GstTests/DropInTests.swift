// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// moq-dev's documented moq-gst pipelines (`doc/bin/gstreamer.md`, `rs/moq-gst/README.md`), run on
/// SwiftMoQ's elements with their text unchanged — property names, pad names, quoting, an
/// `http://` URL whose certificate hash is fetched from the relay — except the host's port and
/// the window and speakers, which become sinks the test can count.
@Suite("moq-gst's documented pipelines, unchanged", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct DropInTests {
    /// What the documents play from: an MP4 with H.264 and AAC (`bbb.mp4`), 10 s here.
    static func mp4() async throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-dropin-\(getpid()).mp4")
        let maker = try TestPipeline(
            "videotestsrc num-buffers=300 pattern=ball ! video/x-raw,width=320,height=240,framerate=30/1 "
                + "! x264enc speed-preset=ultrafast key-int-max=30 ! h264parse ! mp4mux name=m ! filesink location=\(file.path) "
                + "audiotestsrc num-buffers=470 ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! avenc_aac ! aacparse ! m."
        )
        #expect(maker.play() != GST_STATE_CHANGE_FAILURE)
        _ = try await maker.waitFor(.seconds(60)) { $0.isEOS }
        maker.setState(GST_STATE_NULL)
        return file
    }

    /// `doc/bin/gstreamer.md`, "Publish": a looping file through parsebin into moqsink's request pads.
    static func publisher(_ file: URL, host: String = "localhost", port: UInt16) -> String {
        """
        multifilesrc location=\(file.path) loop=true ! parsebin name=parse \
          parse. ! queue ! identity sync=true ! mux.sink_0 \
          parse. ! queue ! identity sync=true ! mux.sink_1 \
          moqsink name=mux url="http://\(host):\(port)" broadcast="bbb"
        """
    }

    /// "Subscribe", the terse form: `moqsrc ! decodebin3 ! …` links the first pad offered (video).
    static func terseViewer(host: String = "localhost", port: UInt16) -> String {
        """
        moqsrc url="http://\(host):\(port)" broadcast="bbb" \
          ! decodebin3 ! videoconvert ! appsink name=out sync=false
        """
    }

    @Test("publish (parsebin → moqsink url=http://…) and both documented ways to watch (moqsrc url=http://…)")
    func documentedPipelines() async throws {
        try await scoped(
            try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            let file = try await Self.mp4()
            defer { try? FileManager.default.removeItem(at: file) }
            let publisher = try TestPipeline(Self.publisher(file, port: relay.port))
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }

            // "Subscribe", the two-branch form: one pad per rendition, linked by name.
            let both = try TestPipeline(
                """
                moqsrc name=s url="http://localhost:\(relay.port)" broadcast="bbb" \
                  s.video_0 ! queue ! decodebin3 ! videoconvert ! appsink name=video sync=false \
                  s.audio_0 ! queue ! decodebin3 ! audioconvert ! appsink name=audio sync=false
                """)
            let video = try both.record("video")
            let audio = try both.record("audio")
            #expect(both.play() != GST_STATE_CHANGE_FAILURE)
            try await eventually("decoded video and audio", timeout: .seconds(30)) {
                video.count >= 30 && audio.count >= 30
            }
            video.stop()
            audio.stop()
            #expect(both.errors.isEmpty, "\(both.errors)")
            both.setState(GST_STATE_NULL)

            // The terse form: `moqsrc ! decodebin3 ! …` links the first pad offered (video).
            let terse = try TestPipeline(Self.terseViewer(port: relay.port))
            let frames = try terse.record("out")
            #expect(terse.play() != GST_STATE_CHANGE_FAILURE)
            try await eventually("decoded video (terse form)", timeout: .seconds(30)) { frames.count >= 30 }
            frames.stop()
            #expect(terse.errors.isEmpty, "\(terse.errors)")
            terse.setState(GST_STATE_NULL)
            #expect(publisher.errors.isEmpty, "\(publisher.errors)")
        }
    }

    @Test("UDP blocked: the same pipelines with url=http://… fall back to WebSocket (both elements) and play")
    func udpBlocked() async throws {
        try await scoped(
            try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            // A port where UDP goes nowhere and TCP reaches the relay's HTTP port: QUIC never answers.
            let blackhole = try RustPeer.launch(["udp-blackhole", "--target", "\(relay.port)"])
            defer { blackhole.terminateInBackground() }
            let port = UInt16(try await blackhole.waitFor(event: "listening", timeout: .seconds(20)).int("port") ?? 0)
            let file = try await Self.mp4()
            defer { try? FileManager.default.removeItem(at: file) }
            let publisher = try TestPipeline(Self.publisher(file, host: "127.0.0.1", port: port))
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            let terse = try TestPipeline(Self.terseViewer(host: "127.0.0.1", port: port))
            let frames = try terse.record("out")
            #expect(terse.play() != GST_STATE_CHANGE_FAILURE)
            try await eventually("decoded video over WebSocket", timeout: .seconds(30)) { frames.count >= 30 }
            frames.stop()
            #expect(await relay.sessionStats().map(\.binding) == [.webSocket, .webSocket])
            #expect(terse.errors.isEmpty, "\(terse.errors)")
            #expect(publisher.errors.isEmpty, "\(publisher.errors)")
            terse.setState(GST_STATE_NULL)
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// `swiftmoq relay --web`'s watch page in a real browser: Debian's Chromium, headless, loads the
/// page from the relay, connects back over WebTransport pinned to the relay's certificate hash,
/// follows moqsink's hang catalog and decodes H.264 and Opus with WebCodecs.
@Suite("The watch page in headless Chromium", .serialized, .timeLimit(.minutes(3)))
struct WatchPageTests {
    @Test("moqsink's SMPTE bars reach the page's canvas (green at the centre) with a publish-to-render latency")
    func playsInChromium() async throws {
        let root = try RustPeer.packageRoot()
        var config = MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)
        config.serveWatchPage = true
        try await withRelay(try MoqRelay.start(config)) {
            (relay) async throws in
            // SMPTE bars: the centre column is the green bar (75 %: about (0, 191, 0)).
            let video =
                "videotestsrc is-live=true pattern=smpte ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 ! "
                + "x264enc tune=zerolatency key-int-max=30 ! video/x-h264,profile=constrained-baseline ! h264parse ! "
                + "video/x-h264,stream-format=avc,alignment=au"
            let publisher = try TestPipeline(
                "moqsink name=m \(relay.elementProperties) broadcast=bars \(video) ! m.sink_0 \(Publish.audio) ! m.sink_1"
            )
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }

            let screenshot = root.appendingPathComponent("build/watch-page.png").path
            try? FileManager.default.createDirectory(
                atPath: root.appendingPathComponent("build").path, withIntermediateDirectories: true)
            let driver = try CLI.Running(
                executable: URL(fileURLWithPath: "/usr/bin/python3"),
                args: [
                    root.appendingPathComponent("Tests/Web/watch_page.py").path,
                    "--url", "http://127.0.0.1:\(relay.port)/?broadcast=bars", "--screenshot", screenshot,
                    "--until-video-frames", "30", "--until-audio-frames", "20", "--timeout-s", "60",
                ], stdin: nil)
            let result = try await driver.wait(timeout: .seconds(90))
            #expect(result.status == 0, "the page did not play: \(result.stdout) \(result.stderr)")
            let line = try #require(result.stdoutLines.last, "no state from the page: \(result.stderr)")
            let state = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            #expect(state["connected"] as? Bool == true)
            #expect(state["playing"] as? String == "bars")
            #expect((state["broadcasts"] as? [String])?.contains("bars") == true)
            let pixel = try #require(state["pixel"] as? [Int], "no pixel: \(line)")
            #expect(pixel.count == 3 && pixel[1] > 140 && pixel[0] < 60 && pixel[2] < 60, "centre pixel \(pixel)")
            // moqsink puts its wall clock in the catalog: the page measures capture to canvas. What it
            // measures is for benchmarks; here only that it is a figure in the right unit (a µs/ms or
            // epoch mix-up would be off by 1000× or by decades).
            let latency = try #require(state["latencyMs"] as? Double, "no latency figure: \(line)")
            #expect(latency > 0 && latency < 10_000, "latency \(latency) ms")
            #expect(FileManager.default.fileExists(atPath: screenshot))
            print("watch page: \(line)")
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// An X server in memory (`Xvfb -displayfd`: it picks a free display and says which).
final class VirtualDisplay: Sendable {
    private let daemon: Daemon
    /// `:N`.
    var name: String { ":" + daemon.firstLine }

    init(width: Int, height: Int) async throws {
        daemon = try await Daemon(
            "/usr/bin/Xvfb", ["-displayfd", "1", "-screen", "0", "\(width)x\(height)x24", "-nolisten", "tcp"])
    }
}

/// One raw RGB frame pulled from an appsink named `out`.
func pullRGB(_ pipeline: TestPipeline, timeout: Duration = .seconds(20)) async throws -> [UInt8] {
    let sink = pipeline.element("out")!
    defer { gst_object_unref(sink) }
    let appsink = Handed(UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self))
    let pulled = try await offThePool {
        Handed(gst_app_sink_try_pull_sample(appsink.value, GstClockTime(timeout.components.seconds) * 1_000_000_000))
    }
    guard let sample = pulled.value
    else {
        throw TestKitError.expectationFailed(
            "no frame: \(pipeline.collected.filter { if case .stateChanged = $0 { false } else { true } })")
    }
    defer { gst_sample_unref(sample) }
    let buffer = gst_sample_get_buffer(sample)!
    var map = GstMapInfo()
    gst_buffer_map(buffer, &map, GST_MAP_READ)
    defer { gst_buffer_unmap(buffer, &map) }
    return Array(UnsafeBufferPointer(start: map.data, count: Int(map.size)))
}

@Suite("screen share", .serialized, .timeLimit(.minutes(2)))
struct ScreenShareTests {
    static let width = 640
    static let height = 480

    @Test("swiftmoq screen-share under Xvfb: what the subscriber decodes is what was drawn on the display")
    func decodesWhatWasDrawn() async throws {
        let display = try await VirtualDisplay(width: Self.width, height: Self.height)
        let raw = "video/x-raw,format=RGB,width=\(Self.width),height=\(Self.height)"
        // Draw a known pattern over the whole screen (no window manager: the window sits at 0,0).
        let painter = try TestPipeline(
            "videotestsrc pattern=smpte is-live=true ! video/x-raw,width=\(Self.width),height=\(Self.height),framerate=5/1 "
                + "! videoconvert ! ximagesink display=\(display.name) sync=false")
        #expect(painter.play() != GST_STATE_CHANGE_FAILURE)
        let reference = try TestPipeline(
            "videotestsrc pattern=smpte num-buffers=1 ! video/x-raw,width=\(Self.width),height=\(Self.height) "
                + "! videoconvert ! \(raw) ! appsink name=out")
        #expect(reference.play() != GST_STATE_CHANGE_FAILURE)
        let expected = try await pullRGB(reference)
        reference.setState(GST_STATE_NULL)

        try await withRelay(try localRelay()) { (relay) async throws in
            let sharer = try CLI.start([
                "screen-share", "--url", "moql://127.0.0.1:\(relay.port)/anon", "--tls-fingerprint", relay.fingerprint,
                "--broadcast", "desk", "--display", display.name, "--duration", "30",
            ])
            let viewer = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=desk s.video_0 ! decodebin ! videoconvert ! videoscale "
                    + "! \(raw) ! appsink name=out sync=false max-buffers=2 drop=true")
            #expect(viewer.play() != GST_STATE_CHANGE_FAILURE)
            // A few frames in, the encoder has converged on the static picture.
            var frame: [UInt8] = []
            for _ in 0..<20 { frame = try await pullRGB(viewer) }
            #expect(frame.count == expected.count)
            var total = 0
            for i in 0..<min(frame.count, expected.count) { total += abs(Int(frame[i]) - Int(expected[i])) }
            let meanError = Double(total) / Double(max(1, expected.count))
            #expect(meanError < 8, "mean absolute error \(meanError) per channel (0–255)")
            // The pattern has colour: not a black or uniform screen.
            #expect(Set(stride(from: 0, to: frame.count, by: 3 * 97).map { frame[$0] }).count > 4)
            #expect(viewer.errors.isEmpty, "\(viewer.errors)")
            viewer.setState(GST_STATE_NULL)
            painter.setState(GST_STATE_NULL)
            kill(sharer.process.processIdentifier, SIGINT)
            let result = try await sharer.wait(timeout: .seconds(15))
            #expect(result.status == 0, "\(result.stderr)")
        }
    }
}

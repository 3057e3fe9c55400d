// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqInteropSupport
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// A ladder played by playbin3 (issue #23: caps change downstream as GStreamer expects, "test with
/// decodebin3/playbin3 too"): playbin3 selects the one picture stream moqsrc offers for the ladder,
/// adaptive bitrate stays on, and a rendition change (here a `max-bitrate` the application sets on the
/// source it was handed) renegotiates playbin3's decoder and sink with no error.
@Suite("moqsrc in playbin3: a ladder", .serialized)
struct MoqSrcPlaybin3LadderTests {
    /// The source playbin3 made, as `source-setup` handed it (a reference is kept).
    final class SourceBox: @unchecked Sendable {
        private let lock = NSLock()
        private var element: UnsafeMutablePointer<GstElement>?
        func set(_ e: UnsafeMutablePointer<GstElement>) {
            lock.withLock {
                gst_object_ref(e)
                element = e
            }
        }
        var value: UnsafeMutablePointer<GstElement>? { lock.withLock { element } }
        deinit { if let element { gst_object_unref(element) } }
    }

    /// The width in a sample's caps (0 without).
    static func width(_ sample: Sample) -> Int32 {
        guard let caps = sample.caps, let range = caps.firstRange(of: "width=(int)") else { return 0 }
        return Int32(caps[range.upperBound...].prefix(while: \.isNumber)) ?? 0
    }

    @Test("playbin3 plays the top rung of a ladder, and renegotiates when the rung changes, with no error")
    func ladderInPlaybin3() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            // Two renditions of one picture (x264 after a tee), keyframes aligned by moqsink.
            var launch = "moqsink name=moq \(relay.elementProperties) broadcast=room/ladder keyframe-interval=500 "
            launch += "sink_0::track=hi sink_1::track=lo "
            launch +=
                "videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! tee name=t "
            for (i, (width, height, kbps)) in [(320, 180, 600), (160, 90, 150)].enumerated() {
                launch +=
                    "t. ! queue ! videoscale ! video/x-raw,width=\(width),height=\(height) "
                    + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=1000 bitrate=\(kbps) "
                    + "! h264parse ! video/x-h264,stream-format=avc,alignment=au ! moq.sink_\(i) "
            }
            let publisher = try TestPipeline(launch)
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }

            let player = try TestPipeline(
                "playbin3 name=p uri=moql://127.0.0.1:\(relay.port)/anon/room/ladder?tls-fingerprint=\(relay.fingerprint)"
            )
            let source = SourceBox()
            let setup: @convention(c) (gpointer?, UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
                _, element, data in
                guard let element, let data else { return }
                // The application allows its URI's TLS settings, and keeps the source to set a cap later.
                setProperty(element, "uri-tls", true)
                Unmanaged<SourceBox>.fromOpaque(data).takeUnretainedValue().set(element)
            }
            g_signal_connect_data(
                player.pipeline, "source-setup", unsafeBitCast(setup, to: GCallback.self),
                Unmanaged.passUnretained(source).toOpaque(), nil, GConnectFlags(0))
            let videoSink = gst_element_factory_make("appsink", "v")!
            g_object_set_property_object(player.pipeline, "video-sink", videoSink)
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let widths = SampleRecorder(AppSink(element: videoSink), keep: Self.width)
            defer {
                widths.stop()
                player.setState(GST_STATE_NULL)
            }
            try await eventually("the top rung decoded", timeout: .seconds(20)) {
                widths.entries.filter { $0 == 320 }.count >= 30
            }
            let moqsrc = try #require(source.value)
            #expect(stringProperty(moqsrc, "video-track") == nil, "no rendition pinned: adaptive bitrate chooses")
            // The application caps the bitrate below the top rung: moqsrc steps down, the caps change.
            // Judged from the cap on: a player may start on the lower rung before it steps up.
            let beforeCap = widths.entries.count
            setProperty(moqsrc, "max-bitrate", 300_000)
            try await eventually("the lower rung decoded after the top", timeout: .seconds(20)) {
                widths.entries.dropFirst(beforeCap).drop { $0 == 320 }.filter { $0 == 160 }.count >= 30
            }
            let after = widths.entries.dropFirst(beforeCap).drop { $0 != 160 }
            #expect(!after.contains(320), "the cap holds: no frame of the top rung after the switch")
            #expect(player.errors.isEmpty, "\(player.errors)")
        }
    }
}

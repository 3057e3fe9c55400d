// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// moqsrc ends its streams the way GStreamer's sources do (issue #22): when downstream returns EOS
/// on every linked pad (a snapshot, a sink that took what it wanted), every pad sends EOS and the
/// pipeline finishes; an EOS sent to the element (gst-launch -e) ends every stream too, and a
/// pipeline that links none of its pads gets an ERROR that says so.
@Suite("moqsrc ends its streams as GStreamer's sources do", .serialized, .timeLimit(.minutes(2)))
struct MoqSrcEOSTests {
    @Test("pngenc snapshot=true returns EOS after one frame: moqsrc sends EOS, the PNG is written, the pipeline ends")
    func snapshotEnds() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "snap")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-snap-\(getpid()).png")
            defer { try? FileManager.default.removeItem(at: file) }
            // The audio pad is left unlinked, as in the pipeline.
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=snap s.video_0 ! decodebin ! videoconvert ! "
                    + "pngenc snapshot=true ! filesink location=\(file.path)")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            _ = try await player.waitFor(.seconds(30)) { $0.isEOS }
            let bytes = try Data(contentsOf: file)
            #expect(bytes.count > 100 && bytes.prefix(4) == Data([0x89, 0x50, 0x4e, 0x47]), "\(bytes.count) bytes")
            #expect(player.errors.isEmpty, "\(player.errors)")
        }
    }

    @Test("an EOS sent to the pipeline (gst-launch -e) ends every stream, also after a branch already finished")
    func eosEventEnds() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "eos")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            // The video branch takes 10 buffers and says EOS; audio plays on until the EOS event.
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=eos s.video_0 ! identity eos-after=10 ! fakesink "
                    + "s.audio_0 ! queue ! fakesink name=a sync=true")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            try await eventually("video finished, audio playing", timeout: .seconds(30)) {
                (statsField(src, "video-frames") ?? 0) >= 10 && (statsField(src, "audio-frames") ?? 0) >= 50
            }
            gst_element_send_event(player.pipeline, gst_event_new_eos())
            _ = try await player.waitFor(.seconds(10)) { $0.isEOS }
            #expect(player.errors.isEmpty, "\(player.errors)")
        }
    }

    @Test("no pad linked at all: an ERROR that says what to link, and the streams end")
    func nothingLinked() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "unlinked")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            // Another branch makes it a pipeline (one element alone would be parsed as the element).
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=unlinked audiotestsrc is-live=true ! fakesink")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            _ = try await player.waitFor(.seconds(30)) { $0.isError }
            let text = player.errors.map(\.description).joined(separator: "\n")
            #expect(text.contains("not-linked") && text.contains("video_0"), "\(text)")
        }
    }
}

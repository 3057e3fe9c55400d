// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// The recipes in pipelines/, expanded like scripts/run-pipeline.sh does.
enum Recipe {
    static func text(_ name: String, _ variables: [String: String]) throws -> String {
        let url = try RustPeer.packageRoot().appendingPathComponent("pipelines/\(name).pipeline")
        var lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }.joined(separator: " ")
        for (key, value) in variables { lines = lines.replacingOccurrences(of: "${\(key)}", with: value) }
        return lines
    }

    static let names = [
        "test-pattern", "camera", "camera-ladder", "multi-camera", "mic", "screen-share", "watch", "record",
    ]
}

@Suite("recipes in pipelines/", .serialized, .timeLimit(.minutes(2)))
struct RecipeTests {
    @Test("every recipe parses: its elements exist and its links are valid", arguments: Recipe.names)
    func parses(_ name: String) throws {
        let text = try Recipe.text(
            name,
            [
                "MOQ_URL": "moql://127.0.0.1:9/anon", "MOQ_BROADCAST": "x", "MOQ_TLS": "", "MOQ_PLAYOUT": "",
                "MOQ_OUTPUT": "/dev/null", "CAMERA": "/dev/video0", "CAMERA2": "/dev/video2", "DISPLAY": ":0",
            ])
        #expect(!text.contains("${"), "unexpanded variable in \(name): \(text)")
        _ = try TestPipeline(text)
    }

    @Test("test-pattern → relay → record: a Matroska file with the H.264 video and the Opus audio")
    func recordsTestPattern() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let tls = "tls-fingerprint=\(relay.fingerprint)"
            let url = "moql://127.0.0.1:\(relay.port)/anon"
            let publisher = try TestPipeline(
                try Recipe.text("test-pattern", ["MOQ_URL": url, "MOQ_BROADCAST": "rec", "MOQ_TLS": tls]))
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-record-\(getpid()).mkv")
            defer { try? FileManager.default.removeItem(at: file) }
            let recorder = try TestPipeline(
                try Recipe.text(
                    "record",
                    [
                        "MOQ_URL": url, "MOQ_BROADCAST": "rec", "MOQ_TLS": tls, "MOQ_PLAYOUT": "",
                        "MOQ_OUTPUT": file.path,
                    ])
            )
            #expect(recorder.play() != GST_STATE_CHANGE_FAILURE)
            let src = recorder.element("src")!
            defer { gst_object_unref(src) }
            // Both streams, each of which may start late under load.
            try await eventually(
                "2 s of video and of audio recorded", timeout: .seconds(30),
                detail: { "stats \(stringProperty(src, "stats") ?? "")" }
            ) {
                (statsField(src, "video-frames") ?? 0) >= 60 && (statsField(src, "audio-frames") ?? 0) >= 100
            }
            gst_element_send_event(recorder.pipeline, gst_event_new_eos())
            try await recorder.waitFor { $0.isEOS }
            #expect(recorder.errors.isEmpty, "\(recorder.errors)")
            recorder.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)

            let decoded = try await decodeRecording(file, video: "h264parse ! avdec_h264", audio: "opusdec")
            #expect(decoded.errors.isEmpty, "\(decoded.errors)")
            #expect(
                decoded.videoFrames >= 50 && decoded.audioBuffers >= 80,
                "decoded \(decoded.videoFrames) frames, \(decoded.audioBuffers) audio buffers")
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// moqsrc's `data_%u` pads (`data-tracks`): named tracks outside the catalog.
@Suite("moqsrc data pads", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct MoqSrcDataTests {
    func texts(_ recorder: SampleRecorder<SeenBuffer>) -> [SeenBuffer] { recorder.entries }

    @Test("moqsink data pad → relay → moqsrc data-tracks=chat: every frame in order, on the media's timeline")
    func swiftToSwift() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try TestPipeline(
                "moqsink name=m \(relay.elementProperties) broadcast=talk sink_1::track=chat "
                    + "\(Publish.audio) ! m.sink_0 "
                    + "appsrc name=chat is-live=true do-timestamp=true format=time caps=application/x-moq-data ! m.sink_1"
            )
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            // telemetry is not published: its pad waits and costs nothing.
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=talk data-tracks=chat,telemetry "
                    + "s.audio_0 ! fakesink sync=true s.data_0 ! appsink name=d sync=false s.data_1 ! fakesink")
            let data = try player.record("d")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            defer { data.stop() }
            // (A sink on a track that never sends must not hold the pipeline in PAUSED: telemetry's.)
            try await eventually("audio playing", timeout: .seconds(20)) {
                player.collected.contains { $0.structureName == "playback.start" }
            }
            let src = try AppSource(publisher.base, name: "chat")
            let lines = (0..<20).map { "line \($0)" }
            for text in lines {
                try src.push(Array(text.utf8))
                try await Task.sleep(for: .milliseconds(10))
            }
            try await eventually("the lines", timeout: .seconds(10)) { data.count >= lines.count }
            let got = data.entries
            #expect(got.map(\.size) == lines.map(\.utf8.count), "one buffer per frame, whole")
            #expect(got.map(\.hash) == lines.map { fnv(Array($0.utf8)) }, "the lines, in order")
            // Stamped on the broadcast's timeline (the audio anchored it), in order.
            let pts = got.compactMap(\.pts)
            #expect(pts.count == got.count && zip(pts, pts.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
        }
    }

    @Test("a Rust publisher's track (no catalog) on moqsrc's data pad: every frame intact, then EOS")
    func rustPublisher() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("rust-data")
        let (groups, size) = (12, 300)
        let publisher = try RustPeer.launch(
            ["publish"] + relay.client + [
                "--broadcast", name, "--track", "telemetry", "--groups", "\(groups)", "--frames-per-group", "1",
                "--payload-size", "\(size)", "--interval-ms", "20", "--wait-subscriber", "--linger-ms", "3000",
            ])
        defer { publisher.terminateInBackground() }
        let player = try TestPipeline(
            "moqsrc name=s url=\(relay.url()) tls-fingerprint=\(relay.fingerprint) broadcast=\(name) "
                + "data-tracks=telemetry s.data_0 ! appsink name=d sync=false")
        let data = try player.record("d")
        #expect(player.play() != GST_STATE_CHANGE_FAILURE)
        defer { player.setState(GST_STATE_NULL) }
        defer { data.stop() }
        _ = try await player.waitFor(.seconds(30)) { $0.isEOS }
        #expect(data.entries.map(\.hash) == (0..<groups).map { fnv(rustPayload(group: $0, frame: 0, size: size)) })
        #expect(player.errors.isEmpty, "\(player.errors)")
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// moqsrc's gapless prefix follow with moq-dev's Rust publisher and relay on the other side.
@Suite("moqsrc queue with moq-dev's peer", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct QueueInteropTests {
    @Test(
        "two Rust broadcasts under a prefix, through the Rust relay: the second is prerolled and follows the first gaplessly"
    )
    func rustBroadcastsBackToBack() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let room = RustPeer.uniqueName("queue")
        let first = try RustPeer.launch(
            ["publish-media"] + relay.client + ["--broadcast", "\(room)/a", "--seconds", "3"])
        defer { first.terminateInBackground() }
        _ = try await first.waitFor(event: "announced", timeout: .seconds(20))
        // The Opus packets as moqsrc pushes them (20 ms each, no decoder in between).
        let player = try TestPipeline(
            "moqsrc name=s url=\(relay.url()) prefix=\(room)/ tls-fingerprint=\(relay.fingerprint) latency=300 "
                + "s.audio_0 ! appsink name=a sync=false")
        let audio = try player.record("a")
        #expect(player.play() != GST_STATE_CHANGE_FAILURE)
        defer { player.setState(GST_STATE_NULL) }
        defer { audio.stop() }
        try await eventually("the first broadcast plays", timeout: .seconds(20)) { audio.count > 0 }
        let second = try RustPeer.launch(
            ["publish-media"] + relay.client + ["--broadcast", "\(room)/b", "--seconds", "6"])
        defer { second.terminateInBackground() }
        _ = try await first.waitFor(event: "finished", timeout: .seconds(20))
        try await eventually(
            "the second broadcast plays", timeout: .seconds(20),
            detail: {
                "\(audio.count) buffers, last publisher times \(audio.entries.suffix(3).map { $0.publisherTime ?? 0 }); "
                    + "\(player.collected.filter { $0.structureName != "stats" }.suffix(12))"
            }
        ) {
            player.collected.contains { $0.structureName == "queue.advance" } && audio.count > 200
        }
        // The switch: the second publisher's clock restarts, so its timestamps are lower.
        let buffers = audio.entries
        let at = try #require(
            buffers.indices.dropFirst().first {
                (buffers[$0].publisherTime ?? 0) < (buffers[$0 - 1].publisherTime ?? 0)
            }, "no switch to the second broadcast")
        let pts = buffers.compactMap(\.pts)
        try #require(pts.count == buffers.count)
        // Within a broadcast consecutive packets are 20 ms apart; at the switch the next one starts at
        // most one packet late, and never early (no overlap).
        let step = pts[at] > pts[at - 1] ? pts[at] - pts[at - 1] : 0
        #expect(step >= 19_000_000 && step <= 40_000_000, "\(Double(step) / 1e6) ms between the broadcasts")
        let events = player.collected.compactMap(\.structureName).filter { $0.hasPrefix("queue.") }
        #expect(events.first == "queue.preroll" && events.contains("queue.advance"), "\(events)")
        #expect(player.collected.contains { $0.structure?.contains("prerolled=(boolean)true") == true })
        #expect(player.errors.isEmpty, "\(player.errors)")
    }
}

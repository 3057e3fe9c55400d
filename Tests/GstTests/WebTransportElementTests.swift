// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// moqsink and moqsrc with `url=https://…` and `url=http://…` (WebTransport), as moq-gst's
/// documented pipelines write them. Part of moqsrc's serialized suite: media tests that run
/// beside each other on two cores measure the machine, not the code.
extension MoqSrcTests {
    /// Plays `broadcast` with `source` properties and returns once video and audio flowed.
    static func playOverWebTransport(_ properties: String, broadcast: String) async throws {
        let (player, video, audio) = try MoqSrcPlayer.start("\(properties) broadcast=\(broadcast)")
        try await eventually("1 s of media", timeout: .seconds(20)) { video.count >= 30 && audio.count >= 50 }
        video.stop()
        audio.stop()
        #expect(player.errors.isEmpty, "\(player.errors)")
        player.setState(GST_STATE_NULL)
    }

    @Test("moqsink url=https://… (pinned) → Swift relay → moqsrc url=http://… (hash fetched from the relay)")
    func throughTheSwiftRelay() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(
                "url=https://127.0.0.1:\(relay.port)/anon tls-fingerprint=\(relay.fingerprint)", broadcast: "wt")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            try await Self.playOverWebTransport("url=http://127.0.0.1:\(relay.port)/anon", broadcast: "wt")
            #expect(await relay.sessionStats().allSatisfy { $0.binding == .webTransport })
            #expect(publisher.errors.isEmpty, "\(publisher.errors)")
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test("moqsink and moqsrc with url=https://… through moq-dev's Rust relay")
    func throughTheRustRelay() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let properties = "url=https://127.0.0.1:\(relay.port)/anon tls-fingerprint=\(relay.fingerprint)"
        let name = RustPeer.uniqueName("wt-gst")
        let publisher = try Publish.pipeline(properties, broadcast: name)
        #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
        try await Self.playOverWebTransport(properties, broadcast: name)
        #expect(publisher.errors.isEmpty, "\(publisher.errors)")
        publisher.setState(GST_STATE_NULL)
    }

    @Test("an https:// URL whose certificate the system does not trust: an ERROR that says how to pin it")
    func unverifiedIsRefused() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let player = try TestPipeline(
                "moqsrc url=https://127.0.0.1:\(relay.port)/anon broadcast=x timeout=3 ! fakesink")
            _ = player.play()
            try await eventually("an error", timeout: .seconds(10)) { !player.errors.isEmpty }
            // In the element's terms: its property, not the command line's flag.
            let text = player.errors.compactMap(\.text).joined(separator: "\n")
            #expect(text.contains("set the element's tls-fingerprint="), "\(text)")
            #expect(!text.contains("--tls-fingerprint") && !text.contains("--tls-root-file"), "\(text)")
            player.setState(GST_STATE_NULL)
        }
    }
}

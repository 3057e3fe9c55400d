// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

/// Several cameras in one broadcast: a track per source, each played on its own.
@Suite("several cameras", .serialized, .timeLimit(.minutes(3)))
struct MultiCameraTests {
    /// The mean colour of a decoded frame of `track` (RGB).
    /// The mean colour (RGB) of the decoded frames of `track`, once one satisfies `until` (or the
    /// last one seen after 10 s).
    func meanColour(
        _ relay: MoqRelay, broadcast: String, track: String, until: ((Int, Int, Int)) -> Bool = { _ in true }
    ) async throws -> (Int, Int, Int) {
        let player = try TestPipeline(
            "moqsrc name=s \(relay.elementProperties) broadcast=\(broadcast) video-track=\(track) audio-track=none "
                + "s.video_0 ! decodebin ! videoconvert ! video/x-raw,format=RGB "
                + "! appsink name=out sync=false max-buffers=1 drop=true")
        #expect(player.play() != GST_STATE_CHANGE_FAILURE)
        defer { player.setState(GST_STATE_NULL) }
        // moqsrc waits a moment for the asked-for track to be listed (moqsink completes its catalog
        // pad by pad), then plays another one and switches when it appears: judge frames from after that.
        func playing() -> Bool {
            player.collected.contains {
                ($0.structureName == "playback.start" || $0.structureName == "track.switch")
                    && ($0.structure ?? "").contains("track=(string)\(track)")
            }
        }
        // On a timeout, what moqsrc said (it failed once in CI: rear never played within 20 s).
        try await eventually(
            "moqsrc to play \(track)", timeout: .seconds(20),
            detail: {
                player.collected.compactMap { m in
                    guard let name = m.structureName, name != "stats" else { return nil }
                    return m.structure ?? name
                }.suffix(12).joined(separator: "; ") + "; errors \(player.errors)"
            }
        ) { playing() }
        var colour = (0, 0, 0)
        let deadline = ContinuousClock.now + .seconds(10)
        repeat {
            let rgb = try await pullRGB(player)
            let pixels = max(1, rgb.count / 3)
            var sums = (0, 0, 0)
            for i in stride(from: 0, to: rgb.count - 2, by: 3) {
                sums.0 += Int(rgb[i])
                sums.1 += Int(rgb[i + 1])
                sums.2 += Int(rgb[i + 2])
            }
            colour = (sums.0 / pixels, sums.1 / pixels, sums.2 / pixels)
        } while !until(colour) && ContinuousClock.now < deadline
        #expect(player.errors.isEmpty, "\(player.errors)")
        return colour
    }

    @Test("pipelines/multi-camera.pipeline with two test sources as the cameras: each track is its own camera")
    func recipe() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            var text = try Recipe.text(
                "multi-camera",
                [
                    "MOQ_URL": "moql://127.0.0.1:\(relay.port)/anon", "MOQ_BROADCAST": "cams",
                    "MOQ_TLS": "tls-fingerprint=\(relay.fingerprint)", "CAMERA": "front", "CAMERA2": "rear",
                ])
            // Stand-ins for the cameras (a red and a blue picture) and the microphone.
            text = text.replacingOccurrences(of: "v4l2src device=front", with: "videotestsrc is-live=true pattern=red")
            text = text.replacingOccurrences(of: "v4l2src device=rear", with: "videotestsrc is-live=true pattern=blue")
            text = text.replacingOccurrences(of: "alsasrc", with: "audiotestsrc is-live=true")
            let publisher = try TestPipeline(text)
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            let front = try await meanColour(relay, broadcast: "cams", track: "front") { $0.0 > 200 && $0.2 < 60 }
            let rear = try await meanColour(relay, broadcast: "cams", track: "rear") { $0.2 > 200 && $0.0 < 60 }
            #expect(front.0 > 200 && front.2 < 60, "front is the red camera: \(front)")
            #expect(rear.2 > 200 && rear.0 < 60, "rear is the blue camera: \(rear)")
            #expect(publisher.errors.isEmpty, "\(publisher.errors)")
        }
    }

    @Test("swiftmoq publish with two sources of one kind: two tracks, each named after its source, each playable")
    func cliTwoSourcesOfOneKind() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try CLI.start([
                "publish", "--url", "moql://127.0.0.1:\(relay.port)/anon", "--tls-fingerprint", relay.fingerprint,
                "--broadcast", "two", "--source", "test", "--source", "test", "--no-audio", "--width", "160",
                "--height", "120", "--duration", "30",
            ])
            // Before: both were "test-video", refused as a duplicate.
            for track in ["test-video-1", "test-video-2"] {
                _ = try await meanColour(relay, broadcast: "two", track: track)
            }
            kill(publisher.process.processIdentifier, SIGINT)
            let published = try await publisher.wait(timeout: .seconds(20))
            #expect(published.status == 0, "\(published.stderr)")
        }
    }

    @Test("video-track names a track the catalog lists a moment later: moqsrc waits for it and never shows another")
    func namedTrackListedLater() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=late video-track=rear audio-track=none "
                    + "s.video_0 ! fakesink sync=false")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            // The rear camera's branch waits behind a closed valve: its caps, and so its catalog entry, come later.
            let camera =
                "video/x-raw,width=160,height=120,framerate=30/1 ! x264enc tune=zerolatency key-int-max=30 ! h264parse"
            let publisher = try TestPipeline(
                "moqsink name=m \(relay.elementProperties) broadcast=late sink_0::track=front sink_1::track=rear "
                    + "videotestsrc is-live=true pattern=red ! \(camera) ! m.sink_0 "
                    + "videotestsrc is-live=true pattern=blue ! valve name=gate drop=true ! \(camera) ! m.sink_1")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            // The player has the catalog that lists front only.
            _ = try await player.waitFor(.seconds(20)) { $0.streams != nil }
            let gate = publisher.element("gate")!
            defer { gst_object_unref(gate) }
            setProperty(gate, "drop", false)
            func started(_ name: String) -> Bool {
                player.collected.contains {
                    $0.structureName == "playback.start" && ($0.structure ?? "").contains("track=(string)\(name)")
                }
            }
            try await eventually("moqsrc to play", timeout: .seconds(20)) { started("") }
            #expect(started("rear") && !started("front"), "\(player.collected.filter { $0.structureName != nil })")
            #expect(!player.collected.contains { $0.structureName == "track.switch" })
            #expect(!player.warnings.contains { $0.text?.contains("is not a playable") == true }, "\(player.warnings)")
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")

            // A name that never appears: after the wait, the first playable, with a WARNING that says so.
            let misspelt = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=late video-track=raer audio-track=none "
                    + "s.video_0 ! fakesink sync=false")
            #expect(misspelt.play() != GST_STATE_CHANGE_FAILURE)
            defer { misspelt.setState(GST_STATE_NULL) }
            let warning = try await misspelt.waitFor(.seconds(20)) {
                $0.isWarning && $0.text?.contains("video-track \"raer\" is not a playable") == true
            }
            #expect(warning.text?.contains("playing \"front\"") == true, "\(warning.text ?? "")")
            try await eventually("the fallback plays", timeout: .seconds(20)) {
                misspelt.collected.contains { $0.structureName == "playback.start" }
            }
        }
    }
}

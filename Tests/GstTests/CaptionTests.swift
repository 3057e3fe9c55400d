// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

@testable import GstSwiftMoQ

/// Captions: `text/x-raw` into moqsink becomes a `captions` rendition (one cue per group), and
/// moqsrc's `text_0` pad gives the cues back on the picture's timeline, with their durations.
@Suite("Captions (text/x-raw → moqsink → relay → moqsrc text_0)", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct CaptionTests {
    /// Pushes cue `n` (`cue n`, at n s, 500 ms long) into `appsrc`.
    static func push(_ appsrc: AppSource, bytes: [UInt8], atMs: UInt64) throws {
        try appsrc.push(bytes, pts: .milliseconds(atMs), duration: .milliseconds(500))
    }

    @Test("cues line up with the picture they were published with, keep their duration, and drive textoverlay")
    func captionsThroughTheRelay() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try TestPipeline(
                "moqsink name=m \(relay.elementProperties) broadcast=cc \(Publish.video) ! m.sink_0 "
                    + "appsrc name=cc is-live=true format=time caps=text/x-raw,format=utf8 ! m.sink_1")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let appsrc = try AppSource(publisher.base, name: "cc")
            // The first cue at once: its caps put the rendition in the catalog before the players look.
            try Self.push(appsrc, bytes: Array("cue 1".utf8), atMs: 1000)
            let sink = publisher.element("m")!
            defer { gst_object_unref(sink) }
            try await eventually("the caption rendition in the catalog") {
                stringProperty(sink, "stats")?.contains("1.wvtt") == true
            }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=cc latency=300 "
                    + "s.video_0 ! appsink name=v sync=false s.text_0 ! appsink name=t sync=false")
            let overlay = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=cc latency=300 "
                    + "s.video_0 ! decodebin ! videoconvert ! textoverlay name=o ! appsink name=v sync=true "
                    + "s.text_0 ! o.text_sink")
            let video = try player.record("v")
            let text = try player.record("t")
            let shown = try overlay.record("v")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            #expect(overlay.play() != GST_STATE_CHANGE_FAILURE)
            defer {
                video.stop()
                text.stop()
                shown.stop()
            }
            // One cue a second, each pushed half a second before it is due; cue 4 is not UTF-8.
            let start = ContinuousClock.now
            for n in 2...6 {
                try await Task.sleep(until: start + .milliseconds(Int(n) * 1000 - 1500), clock: .continuous)
                let bytes = n == 4 ? [0x63, 0xFF, 0xFE] : Array("cue \(n)".utf8)
                try Self.push(appsrc, bytes: bytes, atMs: UInt64(n) * 1000)
            }
            try await eventually("cues 5 and 6", timeout: .seconds(20)) {
                text.entries.contains { $0.bytes == Array("cue 6".utf8) }
            }
            let cues = text.entries.filter { !($0.bytes ?? []).isEmpty }
            let texts = cues.map { String(decoding: $0.bytes ?? [], as: UTF8.self) }
            #expect(texts == ["cue 1", "cue 2", "cue 3", "cue 5", "cue 6"], "\(texts)")
            #expect(!texts.contains { $0.hasPrefix("c\u{FFFD}") }, "the malformed cue was dropped")
            #expect(cues.allSatisfy { $0.duration == 500_000_000 }, "\(cues.map(\.duration))")
            // Each cue on the picture's timeline: publisher time maps to running time as for the frames.
            var matched = 0
            for cue in cues {
                let n = UInt64(String(decoding: cue.bytes ?? [], as: UTF8.self).dropFirst(4)) ?? 0
                let cueUs = Int64(n * 1_000_000)
                guard
                    let frame = video.entries.filter({ $0.publisherTime != nil && $0.pts != nil }).min(by: {
                        abs(Int64($0.publisherTime! / 1000) - cueUs) < abs(Int64($1.publisherTime! / 1000) - cueUs)
                    }), let cuePts = cue.pts
                else { continue }
                let frameOffset = Int64(bitPattern: frame.pts! &- frame.publisherTime!)
                let cueOffset = Int64(bitPattern: cuePts &- UInt64(cueUs) * 1000)
                #expect(
                    abs(cueOffset - frameOffset) < 1_000_000, "cue \(n): \((cueOffset - frameOffset) / 1000) µs off")
                matched += 1
            }
            #expect(matched >= 2, "cues matched with their frames: \(matched)")
            let warning = publisher.warnings.first { $0.text?.contains("caption buffer was dropped") == true }
            #expect(warning?.text?.contains("not UTF-8") == true, "\(publisher.warnings)")
            #expect(publisher.errors.isEmpty && player.errors.isEmpty, "\(publisher.errors) \(player.errors)")
            // With an overlay waiting for text, the picture still plays in real time (GAPs between cues).
            try await eventually("the overlaid picture plays", timeout: .seconds(20)) { shown.count >= 90 }
            #expect(overlay.errors.isEmpty, "\(overlay.errors)")
            overlay.setState(GST_STATE_NULL)
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test("moq-dev's player reads a catalog with captions: it parses, and decodes the video beside them")
    func rustPlayerIgnoresTheCaptionSection() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("cc")
        let publisher = try TestPipeline(
            "moqsink name=m url=\(relay.url()) broadcast=\(name) tls-fingerprint=\(relay.fingerprint) "
                + "\(Publish.video) ! m.sink_0 appsrc name=cc is-live=true format=time caps=text/x-raw,format=utf8 ! m.sink_1"
        )
        #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
        let appsrc = try AppSource(publisher.base, name: "cc")
        try Self.push(appsrc, bytes: Array("hello".utf8), atMs: 500)
        let watcher = try RustPeer.launch(
            ["watch"] + relay.client + ["--broadcast", name, "--seconds", "10", "--frames", "30"])
        defer { watcher.terminateInBackground() }
        let catalog = try await watcher.waitFor(event: "catalog", timeout: .seconds(30))
        #expect(catalog.line.contains("\"captions\"") && catalog.line.contains("\"1.wvtt\""), "\(catalog)")
        let summary = try await watcher.waitFor(event: "summary", timeout: .seconds(30))
        #expect((summary.int("video_frames") ?? 0) >= 30, "\(summary)")
        #expect(summary.int("errors") == 0, "\(summary)")
        publisher.setState(GST_STATE_NULL)
    }

    @Test("cue text: UTF-8 checked, a trailing NUL dropped, Pango markup reduced to WebVTT's b/i/u")
    func cueText() {
        func cue(_ bytes: [UInt8], markup: Bool = false) -> String? {
            bytes.withUnsafeBytes { try? CaptionText.cue($0, markup: markup).get() }
        }
        #expect(cue(Array("hello\0".utf8)) == "hello")
        #expect(cue([0x68, 0xFF]) == nil)
        #expect(
            cue(Array("<b>loud</b> <span foreground=\"red\">red</span> &amp; <i>x</i>".utf8), markup: true)
                == "<b>loud</b> red &amp; <i>x</i>")
        #expect(cue(Array(repeating: 0x61, count: 20_000)) == nil)
    }
}

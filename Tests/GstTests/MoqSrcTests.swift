// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// A relay in this process with a generated certificate.
func localRelay() throws -> MoqRelay {
    try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent))
}

extension MoqRelay {
    /// `url=… tls-fingerprint=…` for an element connecting at `/anon`.
    var elementProperties: String { "url=moql://127.0.0.1:\(port)/anon tls-fingerprint=\(fingerprint)" }
}

/// moqsink's side of the tests: a live test pattern and tone.
enum Publish {
    static let video =
        "videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! "
        + "x264enc tune=zerolatency key-int-max=30 ! video/x-h264,profile=constrained-baseline ! h264parse ! "
        + "video/x-h264,stream-format=avc,alignment=au"
    static let audio = "audiotestsrc is-live=true wave=white-noise ! audio/x-raw,rate=48000,channels=2 ! opusenc"

    static func pipeline(_ properties: String, broadcast: String, audioOffsetNs: UInt64 = 0) throws -> TestPipeline {
        let audio =
            audioOffsetNs == 0
            ? Self.audio
            : Self.audio.replacingOccurrences(
                of: "audiotestsrc is-live=true", with: "audiotestsrc is-live=true timestamp-offset=\(audioOffsetNs)")
        return try TestPipeline(
            "moqsink name=m \(properties) broadcast=\(broadcast) "
                + "\(video) ! identity name=vp ! m.sink_0 \(audio) ! identity name=ap ! m.sink_1")
    }
}

/// Reads a numeric field of the `stats` property.
func statsField(_ element: UnsafeMutablePointer<GstElement>, _ field: String) -> Double? {
    guard let text = stringProperty(element, "stats"),
        let range = text.range(of: "\(field)=(")
    else { return nil }
    let rest = text[range.upperBound...]
    guard let close = rest.firstIndex(of: ")") else { return nil }
    let value = rest[rest.index(after: close)...].prefix { $0 != "," && $0 != ";" }
    return Double(value)
}

/// moqsrc's own answer to the LATENCY query on its `video_0` pad (nil if it has none or does not answer).
func videoPadLatency(_ element: UnsafeMutablePointer<GstElement>) -> (live: Bool, minNs: UInt64)? {
    guard let pad = gst_element_get_static_pad(element, "video_0"), let query = gst_query_new_latency() else {
        return nil
    }
    defer {
        gst_query_unref(query)
        gst_object_unref(pad)
    }
    guard gst_pad_query(pad, query) != 0 else { return nil }
    var live: gboolean = 0
    var min: GstClockTime = 0
    var max: GstClockTime = 0
    gst_query_parse_latency(query, &live, &min, &max)
    return (live != 0, UInt64(min))
}

func isMonotonic(_ buffers: [SeenBuffer]) -> Bool {
    let pts = buffers.compactMap(\.pts)
    return pts.count == buffers.count && zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 }
}

/// A publisher's frames at a fixed spacing: what of them a pipeline decoded, by the publisher
/// times moqsrc attaches (decoders keep the meta).
struct FrameSpan {
    var count: Int
    var durationNs: UInt64

    func times(_ buffers: [SeenBuffer]) -> [UInt64] { buffers.compactMap(\.publisherTime) }

    /// The frame before the last is there. The last one is not always: moq-rs's video ends with a
    /// group of one frame that moqsrc misses now and then (the track's end may overtake it; see
    /// docs/reliability.md "Open").
    func reachesEnd(_ buffers: [SeenBuffer]) -> Bool {
        guard count > 1, let last = times(buffers).max() else { return false }
        return last + durationNs / 2 >= UInt64(count - 2) * durationNs
    }

    /// Frames missing between consecutive decoded ones: (after ms, missing).
    func gaps(_ buffers: [SeenBuffer]) -> [(afterMs: UInt64, missing: UInt64)] {
        let t = times(buffers)
        return zip(t, t.dropFirst()).compactMap { a, b in
            b > a + durationNs * 3 / 2 ? (a / 1_000_000, (b - a + durationNs / 2) / durationNs - 1) : nil
        }
    }

    /// Where decoding started (ms into the broadcast).
    func firstMs(_ buffers: [SeenBuffer]) -> UInt64 { (times(buffers).first ?? .max / 2) / 1_000_000 }

    func describe(_ buffers: [SeenBuffer]) -> String {
        let t = times(buffers)
        return "\(t.count) of \(count) decoded, from \(firstMs(buffers)) ms to \((t.max() ?? 0) / 1_000_000) ms, "
            + "gaps \(gaps(buffers).map { "\($0.missing) after \($0.afterMs) ms" })"
    }
}

@Suite("moqsrc end to end", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct MoqSrcTests {
    @Test(
        "Rust media publisher (H.264 + Opus) → Rust relay → moqsrc ! decodebin: every frame from the join to the end decoded, monotonic timestamps"
    )
    func rustPublisherToDecodebin() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("media")
        let publisher = try RustPeer.launch(
            ["publish-media"] + relay.client + ["--broadcast", name, "--seconds", "4", "--wait-subscriber"])
        defer { publisher.terminateInBackground() }
        _ = try await publisher.waitFor(event: "announced", timeout: .seconds(20))
        let pipeline = try TestPipeline(
            "moqsrc name=s url=\(relay.url()) broadcast=\(name) tls-fingerprint=\(relay.fingerprint) "
                + "s.video_0 ! decodebin ! video/x-raw ! appsink name=v sync=false "
                + "s.audio_0 ! decodebin ! audio/x-raw ! appsink name=a sync=false")
        let video = try pipeline.record("v")
        let audio = try pipeline.record("a")
        #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
        defer {
            video.stop()
            audio.stop()
        }
        let finished = try await publisher.waitFor(event: "finished", timeout: .seconds(30))
        let videoFrames = finished.int("video_frames") ?? 0
        let audioFrames = finished.int("audio_frames") ?? 0
        #expect(videoFrames >= 100 && audioFrames >= 150, "\(finished)")
        let src = pipeline.element("s")!
        defer { gst_object_unref(src) }
        // The publisher stamps frame i at i × 33,333 µs (video) and i × 20 ms (audio).
        let videoSpan = FrameSpan(count: videoFrames, durationNs: 33_333_000)
        let audioSpan = FrameSpan(count: audioFrames, durationNs: 20_000_000)
        try await eventually(
            "the frame before the last of each track decoded", timeout: .seconds(10),
            detail: {
                "video \(videoSpan.describe(video.entries)), audio \(audioSpan.describe(audio.entries)) of \(finished); "
                    + "stats \(stringProperty(src, "stats") ?? "")"
            }
        ) {
            videoSpan.reachesEnd(video.entries) && audioSpan.reachesEnd(audio.entries)
        }
        // Joining at the live edge skips what arrived while the edge settled and decodebin plugged
        // its decoders (up to a few hundred ms on a loaded machine); from there on, nothing is lost.
        // Audio's decoder is plugged before its first push (a GAP), so that push no longer blocks
        // behind the plugging. Audio skipped once right after its first frame in CI (2026-12-03, 27
        // frames, probably audio arriving after the join, which a GAP now precedes too; not
        // confirmed, docs/reliability.md "Open"): gaps in its first half second are not counted yet.
        let settled = { (span: FrameSpan, buffers: [SeenBuffer]) in
            span.gaps(buffers).filter { $0.afterMs >= span.firstMs(buffers) + 500 }
        }
        #expect(videoSpan.gaps(video.entries).isEmpty, "video \(videoSpan.describe(video.entries))")
        #expect(settled(audioSpan, audio.entries).isEmpty, "audio \(audioSpan.describe(audio.entries))")
        #expect(videoSpan.firstMs(video.entries) <= 1000, "video \(videoSpan.describe(video.entries))")
        #expect(audioSpan.firstMs(audio.entries) <= 1000, "audio \(audioSpan.describe(audio.entries))")
        #expect(isMonotonic(video.entries), "video timestamps go backwards")
        #expect(isMonotonic(audio.entries), "audio timestamps go backwards")
        #expect(pipeline.errors.isEmpty, "\(pipeline.errors)")
        let events = pipeline.collected.compactMap(\.structureName)
        #expect(events.contains("track.ready") && events.contains("playback.start"), "\(events)")
        pipeline.setState(GST_STATE_NULL)
    }

    @Test("moqsink → Swift relay → moqsrc in one process: the A/V offset survives (within one video frame)")
    func avOffsetPreserved() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            // Audio starts 400 ms after video on the publisher's timeline.
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "av", audioOffsetNs: 400_000_000)
            let videoIn = PadRecorder(publisher.element("vp")!)
            let audioIn = PadRecorder(publisher.element("ap")!)
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let (player, video, audio) = try MoqSrcPlayer.start("\(relay.elementProperties) broadcast=av")
            try await eventually("3 s of media", timeout: .seconds(20)) { video.count >= 90 && audio.count >= 150 }
            video.stop()
            audio.stop()
            videoIn.stop()
            audioIn.stop()
            /// (received pts, received − sent pts) of each buffer the publisher sent once.
            func offsets(_ published: [SeenBuffer], _ received: [SeenBuffer]) -> [(at: Int64, offset: Int64)] {
                // Only payloads the publisher sent once identify a buffer.
                var counts: [UInt64: Int] = [:]
                for p in published { counts[p.hash, default: 0] += 1 }
                let sent = Dictionary(
                    published.filter { counts[$0.hash] == 1 }.map { ($0.hash, $0.pts ?? 0) },
                    uniquingKeysWith: { a, _ in a })
                return received.compactMap { r in
                    sent[r.hash].map { (Int64(r.pts ?? 0), Int64(r.pts ?? 0) - Int64($0)) }
                }
            }
            // Each buffer carries the publisher's timestamp (µs precision): moqsink's running time.
            let sentTimes = Set(videoIn.all.compactMap { $0.pts.map { $0 / 1000 } })
            let carried = video.entries.compactMap { $0.publisherTime.map { $0 / 1000 } }
            #expect(carried.count == video.entries.count, "every buffer has the publisher-time meta")
            #expect(carried.filter { sentTimes.contains($0) }.count >= 60, "publisher times match moqsink's input")
            let v = offsets(videoIn.all, video.entries)
            let a = offsets(audioIn.all, audio.entries)
            #expect(v.count >= 60 && a.count >= 100, "matched \(v.count) video, \(a.count) audio buffers")
            // A stall (a loaded machine) may add latency mid-run; it moves both streams at once, so
            // each audio buffer is compared with the video buffer played nearest to it.
            let differences = a.compactMap { audio in
                v.min { abs($0.at - audio.at) < abs($1.at - audio.at) }.map { abs(audio.offset - $0.offset) }
            }.sorted()
            let difference = differences[differences.count / 2]
            #expect(difference < 33_000_000, "video and audio moved by different amounts: \(difference / 1_000_000) ms")
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test("latency-mode=fixed, latency changed while playing: the LATENCY query and the playout delay follow")
    func latencyWhilePlaying() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "lat")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let player = try TestPipeline(
                "moqsrc name=s latency-mode=fixed latency=100 \(relay.elementProperties) broadcast=lat "
                    + "s.video_0 ! fakesink sync=true s.audio_0 ! fakesink sync=true")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            func minLatencyMs() -> UInt64? {
                let query = gst_query_new_latency()!
                defer { gst_query_unref(query) }
                guard gst_element_query(player.pipeline, query) != 0 else { return nil }
                var live: gboolean = 0
                var min: GstClockTime = 0
                var max: GstClockTime = 0
                gst_query_parse_latency(query, &live, &min, &max)
                return UInt64(min) / 1_000_000
            }
            try await eventually("playing") { (statsField(src, "video-frames") ?? 0) > 30 }
            let before = try #require(minLatencyMs())
            #expect(before >= 100 && before < 400, "\(before) ms")
            setProperty(src, "latency", 500)
            try await eventually("the pipeline's latency follows") { (minLatencyMs() ?? 0) >= 500 }
            try await eventually("the playout delay follows", timeout: .seconds(10)) {
                (statsField(src, "video-latency-ms") ?? 0) > 350
            }
            #expect(statsField(src, "target-latency-ms") == 500)
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test("latency-mode=auto (the default): adaptive, adding nothing to the LATENCY query; fixed once latency is set")
    func adaptiveLatencyDefault() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "adaptive")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=adaptive "
                    + "s.video_0 ! fakesink sync=true s.audio_0 ! fakesink sync=true")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            try await eventually("playing") { (statsField(src, "video-frames") ?? 0) > 30 }
            let answer = try #require(videoPadLatency(src), "moqsrc's video pad answers the LATENCY query")
            #expect(answer.live && answer.minNs == 0, "moqsrc answered \(answer.minNs / 1_000_000) ms")
            #expect(stringProperty(src, "stats")?.contains("latency-mode=(string)adaptive") == true)
            // The margin is what lateness asked for, never above latency (100 ms by default).
            #expect((statsField(src, "latency-margin-ms") ?? 1000) <= 100)
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)

            // A pipeline that sets latency asks for that budget: auto is then fixed, as before issue #16.
            let budgeted = try TestPipeline(
                "moqsrc name=s latency=250 \(relay.elementProperties) broadcast=adaptive s.video_0 ! fakesink sync=true"
            )
            #expect(budgeted.play() != GST_STATE_CHANGE_FAILURE)
            let fixed = budgeted.element("s")!
            defer { gst_object_unref(fixed) }
            try await eventually("playing with a budget") { (statsField(fixed, "video-frames") ?? 0) > 10 }
            let budget = try #require(videoPadLatency(fixed), "moqsrc's video pad answers the LATENCY query")
            #expect(budget.minNs == 250_000_000, "moqsrc answered \(budget.minNs / 1_000_000) ms")
            #expect(stringProperty(fixed, "stats")?.contains("latency-mode=(string)fixed") == true)
            budgeted.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test("playbin3 uri=moql://127.0.0.1:PORT/anon/<broadcast>: both streams selected and decoded")
    func playbin3() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "room/pb")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let player = try TestPipeline(
                "playbin3 name=p uri=moql://127.0.0.1:\(relay.port)/anon/room/pb?tls-fingerprint=\(relay.fingerprint)")
            // The application allows TLS settings from its URI (off by default) on the source playbin makes.
            let allowURITLS: @convention(c) (gpointer?, UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
                _, source, _ in
                if let source { setProperty(source, "uri-tls", true) }
            }
            g_signal_connect_data(
                player.pipeline, "source-setup", unsafeBitCast(allowURITLS, to: GCallback.self), nil, nil,
                GConnectFlags(0))
            let videoSink = gst_element_factory_make("appsink", "v")!
            let audioSink = gst_element_factory_make("appsink", "a")!
            g_object_set_property_object(player.pipeline, "video-sink", videoSink)
            g_object_set_property_object(player.pipeline, "audio-sink", audioSink)
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let video = record(videoSink)
            let audio = record(audioSink)
            defer {
                video.stop()
                audio.stop()
            }
            try await eventually("decoded video and audio", timeout: .seconds(20)) {
                video.count >= 30 && audio.count >= 30
            }
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test(
        "TLS settings in a moql:// URI are ignored, with a WARNING that says how to allow them, unless uri-tls is set")
    func uriTLSNeedsOptIn() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let uri = "moql://127.0.0.1:\(relay.port)/anon/room/none?tls-disable-verify=1&timeout=2"
            for allowed in [false, true] {
                let player = try TestPipeline("moqsrc name=s s.video_0 ! fakesink")
                let src = player.element("s")!
                defer { gst_object_unref(src) }
                if allowed { setProperty(src, "uri-tls", true) }
                var error: UnsafeMutablePointer<GError>?
                #expect(gst_uri_handler_set_uri(OpaquePointer(src), uri, &error) != 0)
                _ = player.play()
                // Allowed: the relay's self-signed certificate is accepted, and the (absent)
                // broadcast times out. Ignored: the certificate check refuses the relay.
                let failure = try await player.waitFor(.seconds(20)) { $0.isError }
                if allowed {
                    #expect(
                        failure.text?.contains("not announced") == true || failure.text?.contains("room/none") == true,
                        "\(failure.text ?? "")")
                    #expect(!player.warnings.contains { $0.text?.contains("ignored") == true })
                } else {
                    #expect(
                        player.warnings.contains { $0.text?.contains("tls-disable-verify ignored") == true },
                        "\(player.warnings)")
                    #expect((failure.text ?? "").lowercased().contains("certificate"), "\(failure.text ?? "")")
                }
                player.setState(GST_STATE_NULL)
            }
        }
    }

    @Test("values a moql:// URI gets wrong are ignored with a WARNING naming the key and what it takes")
    func uriBadValuesWarn() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let player = try TestPipeline("moqsrc name=s s.video_0 ! fakesink")
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            setProperty(src, "tls-fingerprint", relay.fingerprint)
            let uri =
                "moql://127.0.0.1:\(relay.port)/anon/room/none?latency-mode=turbo&latency=60001&timeout=-1&timeout=1"
            var error: UnsafeMutablePointer<GError>?
            #expect(gst_uri_handler_set_uri(OpaquePointer(src), uri, &error) != 0)
            // Read before playing, the stats say what playback would use: the default is adaptive (it
            // said "fixed" before issue #22), catching up.
            let idle = stringProperty(src, "stats") ?? ""
            #expect(
                idle.contains("latency-mode=(string)adaptive") && idle.contains("latency-mode-setting=(string)auto")
                    && idle.contains("catch-up=(boolean)true"), "\(idle)")
            // The properties keep what they had: auto, 100 ms (so still adaptive); the valid timeout is taken.
            #expect(stringProperty(src, "latency-mode") == "auto")
            #expect(uintProperty(src, "latency") == 100)
            #expect(uintProperty(src, "timeout") == 1)
            // Each mode by its nick (the enum's own, as a property string takes it).
            for mode in ["fixed", "adaptive", "auto"] {
                #expect(
                    gst_uri_handler_set_uri(OpaquePointer(src), "moql://127.0.0.1:1/anon/x?latency-mode=\(mode)", nil)
                        != 0)
                #expect(stringProperty(src, "latency-mode") == mode)
            }
            #expect(gst_uri_handler_set_uri(OpaquePointer(src), "moql://127.0.0.1:1/anon/x?catch-up=false", nil) != 0)
            #expect(stringProperty(src, "stats")?.contains("catch-up=(boolean)false") == true)
            #expect(gst_uri_handler_set_uri(OpaquePointer(src), uri, &error) != 0)
            _ = player.play()
            // timeout=1 was taken: the absent broadcast fails within seconds, after the warnings.
            let failure = try await player.waitFor(.seconds(20)) { $0.isError }
            #expect(
                failure.text?.contains("not announced") == true || failure.text?.contains("room/none") == true,
                "\(failure.text ?? "")")
            let warnings = player.warnings.compactMap(\.text)
            #expect(
                warnings.contains { $0.contains("latency-mode=turbo ignored: expected auto, adaptive, fixed") },
                "\(warnings)")
            #expect(warnings.contains { $0.contains("latency=60001 ignored") }, "\(warnings)")
            #expect(warnings.contains { $0.contains("timeout=-1 ignored") }, "\(warnings)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("an unreachable relay: WARNINGs while retrying, then one ERROR at `timeout` that says what to check")
    func unreachableRelayTimesOut() async throws {
        let player = try TestPipeline(
            "moqsrc name=s url=moql://127.0.0.1:9/anon broadcast=x tls-disable-verify=true timeout=2 s.video_0 ! fakesink"
        )
        #expect(player.play() != GST_STATE_CHANGE_FAILURE)
        let failure = try await player.waitFor(.seconds(30)) { $0.isError }
        #expect(
            failure.text?.contains("could not connect to moql://127.0.0.1:9/anon within 2 s") == true,
            "\(failure.text ?? "")")
        #expect(
            failure.text?.contains("UDP") == true && failure.text?.contains("tls-fingerprint") == true,
            "\(failure.text ?? "")")
        #expect(player.warnings.contains { $0.text?.contains("retrying") == true }, "\(player.warnings.map(\.text))")
        player.setState(GST_STATE_NULL)
        #expect(player.errors.count == 1, "\(player.errors.map(\.text))")
    }

    @Test("queue entries that are not broadcast paths are left out with a WARNING each; the broadcast plays")
    func invalidQueueEntriesWarn() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "q/one")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=q/one s.video_0 ! fakesink sync=false")
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            setProperty(src, "queue", "q/../x, q/two\u{1}, q/three")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            try await eventually("playing") { (statsField(src, "video-frames") ?? 0) > 10 }
            let warnings = player.warnings.compactMap(\.text)
            #expect(warnings.contains { $0.contains("queue: 'q/../x' left out") && $0.contains("'..'") }, "\(warnings)")
            #expect(warnings.contains { $0.contains("left out") && $0.contains("control characters") }, "\(warnings)")
            #expect(!warnings.contains { $0.contains("q/three") }, "\(warnings)")
            // While playing, a new list is checked the same way.
            setProperty(src, "queue", "q/./y")
            _ = try await player.waitFor(.seconds(10)) {
                $0.isWarning && $0.text?.contains("queue: 'q/./y' left out") == true
            }
            #expect(player.errors.isEmpty, "\(player.errors)")
        }
    }

    @Test("GOAWAY from the relay: moqsink and moqsrc move to new sessions without reconnecting; playback goes on")
    func goawayHandover() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "room/goaway")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let (player, video, audio) = try MoqSrcPlayer.start("\(relay.elementProperties) broadcast=room/goaway")
            try await eventually("playing", timeout: .seconds(20)) { video.count > 30 && audio.count > 30 }
            relay.goaway()
            let before = video.count
            try await eventually("playing on after GOAWAY", timeout: .seconds(20)) { video.count > before + 60 }
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            #expect(statsField(src, "reconnects") == 0)
            let pts = video.entries.compactMap(\.pts)
            let back = zip(pts, pts.dropFirst()).enumerated().filter { $0.element.0 >= $0.element.1 }
            let backwards = back.map { ($0.offset, $0.element.0, $0.element.1) }
            #expect(back.isEmpty, "video timestamps go backwards at \(backwards) of \(pts.count)")
            for pipeline in [player, publisher] {
                #expect(pipeline.errors.isEmpty, "\(pipeline.errors)")
                #expect(!pipeline.warnings.contains { $0.text?.contains("retrying") == true }, "\(pipeline.warnings)")
            }
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    /// The broadcast leaves with its session early in a group and comes back on another one,
    /// with the same timeline: either the same track (moqsink after GOAWAY: the new
    /// subscription starts at that group, whose first frames were already played) or a
    /// restarted publisher whose groups count from 0 again (timestamps from the wall clock).
    @Test(
        "a broadcast announced again on the same timeline: repeats are pushed once, a restart's groups from 0 play",
        arguments: [false, true])
    func sameTimelineAnnouncedAgain(restarted: Bool) async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let first = try await CatalogPublisher(relay, path: "again")
            first.publish(CatalogPublisher.videoOnly)
            let info = TrackInfo(priority: 80, maxAgeMs: 5000)
            let track = Lock(first.broadcast.createTrack("0.avc3", info: info))
            // The first track starts at group 50; a restarted publisher's count from 0 again.
            for _ in 0..<50 { track.withLock { $0 }.appendGroup().finish() }
            // Groups of two seconds (100 frames 20 ms apart); frame n has timestamp n × 20 ms.
            let feeding = Task {
                var n: UInt64 = 0
                var group: GroupProducer?
                var current = track.withLock { $0 }
                while !Task.isCancelled {
                    let now = track.withLock { $0 }
                    if now !== current || n % 100 == 0 {
                        group?.finish()
                        current = now
                        group = current.appendGroup()
                    }
                    let payload = Bytes(withUnsafeBytes(of: n.littleEndian) { Array($0) })
                    if let frame = try? LegacyFrame(timestamp: n * 20_000, payload: payload).encoded() {
                        _ = group?.write(frame, timestamp: n * 20_000)
                    }
                    n += 1
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            defer { feeding.cancel() }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=again s.video_0 ! appsink name=v sync=false")
            let video = try player.record("v")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { video.stop() }
            try await eventually("playing", timeout: .seconds(20)) { video.count > 25 }
            try await eventually("a group begins", timeout: .seconds(5)) {
                let t = track.withLock { $0 }
                return t.latestGroup.map { t.frames(of: $0, from: 0).frames.count == 5 } ?? false
            }
            first.session.close()
            _ = try await first.session.closed()
            let second = try await MoqSession.connect(
                "moql://127.0.0.1:\(relay.port)/anon",
                options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
            defer { second.close() }
            var broadcast = first.broadcast
            if restarted {
                broadcast = BroadcastProducer(path: "again")
                broadcast.createTrack(HangCatalog.trackName, info: TrackInfo(priority: 100, timescale: 1000))
                    .writeSingleFrameGroup(Bytes(CatalogPublisher.videoOnly.jsonBytes()), timestamp: 0)
                let fresh = broadcast.createTrack("0.avc3", info: info)
                track.withLock { $0 = fresh }
            }
            second.publish(broadcast)
            let before = video.count
            try await eventually("playing again", timeout: .seconds(20)) { video.count > before + 25 }
            let payloads = video.entries.map(\.hash)
            #expect(Set(payloads).count == payloads.count, "a frame was pushed twice")
            let pts = video.entries.compactMap(\.pts)
            #expect(zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 }, "timestamps go back or repeat")
            player.setState(GST_STATE_NULL)
            broadcast.close()
            first.broadcast.close()
        }
    }

    @Test("the relay restarts: playback resumes, timestamps stay monotonic, WARNING not ERROR")
    func relayRestart() async throws {
        let port = try freeUDPPort()
        var relay = try await RustRelay.start(["--port", "\(port)"])
        let name = RustPeer.uniqueName("restart")
        // The restarted relay has a new self-signed certificate: verification is off here.
        let properties = "url=moql://127.0.0.1:\(port)/anon tls-disable-verify=true"
        let publisher = try Publish.pipeline(properties, broadcast: name)
        #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
        let (player, video, audio) = try MoqSrcPlayer.start("\(properties) broadcast=\(name)")
        try await eventually("playing", timeout: .seconds(20)) { video.count > 30 }
        await relay.stopAndWait()
        try await player.waitFor(.seconds(30)) { $0.isWarning && $0.text?.contains("retrying") == true }
        let before = video.count
        relay = try await RustRelay.start(["--port", "\(port)"])
        defer { relay.stop() }
        try await eventually("playback resumes", timeout: .seconds(30)) { video.count > before + 30 }
        #expect(isMonotonic(video.entries), "video timestamps go backwards")
        #expect(isMonotonic(audio.entries), "audio timestamps go backwards")
        #expect(player.errors.isEmpty, "\(player.errors)")
        let src = player.element("s")!
        defer { gst_object_unref(src) }
        #expect((statsField(src, "reconnects") ?? 0) >= 1)
        player.setState(GST_STATE_NULL)
        publisher.setState(GST_STATE_NULL)
    }
}

/// `g_object_set(object, name, element, NULL)` (variadic in C).
func g_object_set_property_object(
    _ object: UnsafeMutablePointer<GstElement>, _ name: String, _ value: UnsafeMutablePointer<GstElement>
) {
    var v = GValue()
    g_value_init(&v, gst_element_get_type())
    g_value_set_object(&v, value)
    g_object_set_property(UnsafeMutableRawPointer(object).assumingMemoryBound(to: GObject.self), name, &v)
    g_value_unset(&v)
}

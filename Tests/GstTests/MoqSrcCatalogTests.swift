// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqTestKit
import MoqWire
import SwiftMoQ
import Testing

/// A publisher in the test process that writes catalogs (and frames) by hand.
final class CatalogPublisher: Sendable {
    let session: MoqSession
    let broadcast: BroadcastProducer
    let catalogTrack: TrackProducer

    init(_ relay: MoqRelay, path: String) async throws {
        session = try await MoqSession.connect(
            "moql://127.0.0.1:\(relay.port)/anon",
            options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
        broadcast = BroadcastProducer(path: path)
        catalogTrack = broadcast.createTrack(HangCatalog.trackName, info: TrackInfo(priority: 100, timescale: 1000))
        session.publish(broadcast)
    }

    func publish(_ catalog: HangCatalog) { publishRaw(catalog.jsonBytes()) }

    func publishRaw(_ bytes: [UInt8]) { catalogTrack.writeSingleFrameGroup(Bytes(bytes), timestamp: 0) }

    /// A track fed with one legacy frame per group every `intervalMs` until the task is cancelled.
    func feed(_ name: String, intervalMs: UInt64 = 20, payload: [UInt8] = [0xFC, 0xFF, 0xFE]) -> Task<Void, Never> {
        let track = broadcast.createTrack(name, info: TrackInfo(priority: 80, maxAgeMs: 2000))
        return Task {
            var timestamp: UInt64 = 0
            while !Task.isCancelled {
                if let frame = try? LegacyFrame(timestamp: timestamp, payload: Bytes(payload)).encoded() {
                    track.writeSingleFrameGroup(frame, timestamp: timestamp)
                }
                timestamp += intervalMs * 1000
                try? await Task.sleep(for: .milliseconds(intervalMs))
            }
        }
    }

    func close() {
        broadcast.close()
        session.close()
    }

    static var videoOnly: HangCatalog {
        var catalog = HangCatalog()
        var video = VideoConfig(codec: "avc3.42c01e")
        video.codedWidth = 320
        video.codedHeight = 240
        catalog.set("0.avc3", .video(video))
        return catalog
    }

    static var videoAndAudio: HangCatalog {
        var catalog = videoOnly
        catalog.set("1.opus", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
        return catalog
    }
}

func hasPad(_ element: UnsafeMutablePointer<GstElement>, _ name: String) -> Bool {
    guard let pad = gst_element_get_static_pad(element, name) else { return false }
    gst_object_unref(pad)
    return true
}

@Suite("moqsrc: catalogs, discovery and bad input", .serialized, .timeLimit(.minutes(3)))
struct MoqSrcCatalogTests {
    @Test("pads follow the catalog: a new rendition → a new pad; a stream collection each time")
    func newRenditionNewPad() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try await CatalogPublisher(relay, path: "grow")
            defer { publisher.close() }
            publisher.publish(CatalogPublisher.videoOnly)
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=grow fakesink async=false")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            try await eventually("video_0", timeout: .seconds(30)) { hasPad(src, "video_0") }
            #expect(!hasPad(src, "audio_0"))
            publisher.publish(CatalogPublisher.videoAndAudio)
            try await eventually("audio_0 after the catalog grew") { hasPad(src, "audio_0") }
            // And a rendition leaving the catalog takes its pad away.
            publisher.publish(CatalogPublisher.videoOnly)
            try await eventually("audio_0 removed") { !hasPad(src, "audio_0") }
            #expect(hasPad(src, "video_0"))
            let collections = player.collected.filter { $0.streams != nil && $0.source == "s" }
                .map { ($0.streams ?? []).map(\.id).joined(separator: " ") }
            #expect(collections.first == "grow/0.avc3", "\(collections)")
            #expect(collections.contains("grow/0.avc3 grow/1.opus"), "\(collections)")
            #expect(collections.last == "grow/0.avc3", "\(collections)")
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("malformed catalog JSON from a peer: a warning, no crash, and the next catalog applies")
    func malformedCatalog() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try await CatalogPublisher(relay, path: "bad")
            defer { publisher.close() }
            publisher.publishRaw(Array(#"{"video":{"renditions":{"0.avc3":{"codec":42"#.utf8))
            let player = try TestPipeline("moqsrc name=s \(relay.elementProperties) broadcast=bad fakesink async=false")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let warning = try await player.waitFor { $0.isWarning && $0.text?.contains("malformed") == true }
            #expect(warning.text?.contains("catalog of bad") == true, "\(warning)")
            publisher.publish(CatalogPublisher.videoOnly)
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            try await eventually("video_0 from the valid catalog") { hasPad(src, "video_0") }
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("max-resolution that is not WIDTHxHEIGHT: a warning that says what to write, and the cap stays; 0 is any")
    func malformedMaxResolution() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=none max-resolution=640x360 fakesink async=false")
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            #expect(stringProperty(src, "max-resolution") == "640x360")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            setProperty(src, "max-resolution", "720p")
            let warning = try await player.waitFor { $0.isWarning && $0.text?.contains("max-resolution") == true }
            #expect(
                warning.text?.contains("'720p' ignored") == true && warning.text?.contains("1280x720") == true,
                "\(warning)")
            #expect(stringProperty(src, "max-resolution") == "640x360", "the cap stays as it was")
            setProperty(src, "max-resolution", " 1280 x 720 ")
            #expect(stringProperty(src, "max-resolution") == "1280x720")
            setProperty(src, "max-resolution", "0")
            #expect(stringProperty(src, "max-resolution") == nil, "0: any")
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("an unsupported codec in the catalog: that rendition is skipped with a message, the rest plays")
    func unsupportedCodec() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try await CatalogPublisher(relay, path: "mixed")
            defer { publisher.close() }
            var catalog = HangCatalog()
            catalog.set("0.theora", .video(VideoConfig(codec: "theora")))
            catalog.set("1.opus", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
            publisher.publish(catalog)
            let feeder = publisher.feed("1.opus")
            defer { feeder.cancel() }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=mixed s.audio_0 ! appsink name=a sync=false")
            let audio = try player.record("a")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { audio.stop() }
            let warning = try await player.waitFor { $0.isWarning && $0.text?.contains("0.theora") == true }
            #expect(warning.text?.contains("skipped") == true, "\(warning)")
            try await eventually("audio plays") { audio.count >= 10 }
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            #expect(!hasPad(src, "video_0"))
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("video-track changed while playing: the pad switches rendition (track.switch), the stream goes on")
    func switchRendition() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try await CatalogPublisher(relay, path: "ladder")
            defer { publisher.close() }
            var catalog = HangCatalog()
            catalog.set("hd", .video(VideoConfig(codec: "avc3.64001f")))
            catalog.set("sd", .video(VideoConfig(codec: "avc3.42c01e")))
            publisher.publish(catalog)
            let hd = publisher.feed("hd", intervalMs: 33, payload: [0, 0, 0, 1, 0x65, 1])
            let sd = publisher.feed("sd", intervalMs: 33, payload: [0, 0, 0, 1, 0x65, 2])
            defer {
                hd.cancel()
                sd.cancel()
            }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=ladder s.video_0 ! appsink name=v sync=false")
            let video = try player.record("v")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { video.stop() }
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            try await eventually("hd plays") { video.count >= 5 }
            #expect(stringProperty(src, "stats")?.contains("video-track=(string)hd") == true)
            setProperty(src, "video-track", "sd")
            let event = try await player.waitFor { $0.structureName == "track.switch" }
            let fields = event.structure ?? ""
            #expect(fields.contains("track=(string)sd") && fields.contains("from=(string)hd"), "\(fields)")
            let before = video.count
            try await eventually("sd plays") { video.count >= before + 5 }
            #expect(stringProperty(src, "stats")?.contains("video-track=(string)sd") == true)
            // select-streams (what decodebin3/playbin3 send) picks the rendition too.
            var ids: UnsafeMutablePointer<GList>? = nil
            ids = g_list_append(ids, g_strdup("ladder/hd"))
            #expect(gst_element_send_event(src, gst_event_new_select_streams(ids)) != 0)
            g_list_free_full(ids, g_free)
            try await player.waitFor {
                $0.structureName == "track.switch" && $0.structure?.contains("from=(string)sd") == true
            }
            try await eventually("hd again") {
                stringProperty(src, "stats")?.contains("video-track=(string)hd") == true
            }
            #expect(isMonotonic(video.entries), "timestamps go backwards across the switch")
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("an unknown broadcast: a clear ERROR once `timeout` passes")
    func unknownBroadcast() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=nobody/here timeout=1 fakesink async=false")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let error = try await player.waitFor(.seconds(10)) { $0.isError }
            #expect(
                error.text?.contains("\"nobody/here\" was not announced") == true
                    && error.text?.contains("within 1 s") == true,
                "\(error)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("prefix discovery: plays the first broadcast under the prefix, then follows the next one")
    func prefixFollowsNext() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let first = try await CatalogPublisher(relay, path: "room/first")
            var catalog = HangCatalog()
            catalog.set("audio", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
            first.publish(catalog)
            let firstFeed = first.feed("audio")
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) prefix=room s.audio_0 ! appsink name=a sync=false")
            let audio = try player.record("a")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { audio.stop() }
            let src = player.element("s")!
            defer { gst_object_unref(src) }
            try await eventually("the first broadcast plays") { audio.count >= 10 }
            #expect(stringProperty(src, "stats")?.contains("broadcast=(string)room/first") == true)
            firstFeed.cancel()
            first.close()
            let second = try await CatalogPublisher(relay, path: "room/second")
            defer { second.close() }
            second.publish(catalog)
            let secondFeed = second.feed("audio")
            defer { secondFeed.cancel() }
            let before = audio.count
            try await eventually("the next broadcast plays", timeout: .seconds(20)) {
                audio.count >= before + 10
                    && stringProperty(src, "stats")?.contains("broadcast=(string)room/second") == true
            }
            #expect(isMonotonic(audio.entries), "timestamps go backwards across broadcasts")
            #expect(player.errors.isEmpty, "\(player.errors)")
            player.setState(GST_STATE_NULL)
        }
    }

    @Test("bad settings fail the state change with what to fix")
    func badSettings() throws {
        let cases = [
            ("moqsrc broadcast=x", "set the url property"),
            ("moqsrc url=rtsp://relay.example/ broadcast=x", "unsupported scheme"),
            ("moqsrc url=moql://127.0.0.1:1/anon", "no broadcast"),
            ("moqsrc url=moql://127.0.0.1:1/anon broadcast=a prefix=b", "either broadcast or prefix"),
            ("moqsrc url=moql://127.0.0.1:1/anon broadcast=x tls-fingerprint=abc", "fingerprint"),
        ]
        for (description, expected) in cases {
            let pipeline = try TestPipeline(description + " ! fakesink")
            #expect(pipeline.play() == GST_STATE_CHANGE_FAILURE, "\(description)")
            #expect(pipeline.errors.first?.text?.contains(expected) == true, "\(description): \(pipeline.errors)")
        }
    }

    @Test("URI handler: moql://host:port/<root>/<broadcast> and the ?broadcast= form configure moqsrc")
    func uriHandler() throws {
        _ = GstTestEnvironment.ready
        let cases: [(String, String, String)] = [
            ("moql://relay.example:4443/anon/room/cam", "moql://relay.example:4443/anon", "room/cam"),
            ("moql://relay.example/cam", "moql://relay.example:4443/", "cam"),
            (
                "moql://relay.example:4443/a/b?broadcast=room/cam&jwt=T&latency=250",
                "moql://relay.example:4443/a/b?jwt=T", "room/cam"
            ),
        ]
        for (uri, url, broadcast) in cases {
            var error: UnsafeMutablePointer<GError>?
            let element = try #require(gst_element_make_from_uri(GST_URI_SRC, uri, nil, &error), "\(uri)")
            defer { gst_object_unref(element) }
            #expect(stringProperty(element, "url") == url, "\(uri)")
            #expect(stringProperty(element, "broadcast") == broadcast, "\(uri)")
            #expect(String(cString: g_type_name(swiftmoq_object_type(element))) == "GstMoqSrc", "\(uri)")
        }
        var error: UnsafeMutablePointer<GError>?
        let element = gst_element_make_from_uri(GST_URI_SRC, "moql://relay.example/a/b?latency=250", nil, &error)!
        defer { gst_object_unref(element) }
        #expect(statsField(element, "target-latency-ms") == 250)
    }
}

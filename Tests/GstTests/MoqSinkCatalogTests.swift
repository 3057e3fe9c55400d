// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import CGstCheck
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqMedia
import MoqTestKit
import SwiftMoQ
import Testing

/// Caps that real encoders produce, captured from a short pipeline ending in an appsink.
/// (The encoders run for a while: the wait for the preroll is off Swift's cooperative pool.)
func encodedCaps(_ description: String) async throws -> String {
    let pipeline = try TestPipeline(description + " ! appsink name=out sync=false")
    guard let sink = pipeline.element("out") else { throw TestKitError.expectationFailed("no appsink") }
    defer { gst_object_unref(sink) }
    pipeline.setState(GST_STATE_PAUSED)
    let appsink = Handed(UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self))
    let pulled = try await offThePool { Handed(gst_app_sink_try_pull_preroll(appsink.value, 20 * 1_000_000_000)) }
    guard let sample = pulled.value, let caps = gst_sample_get_caps(sample)
    else { throw TestKitError.expectationFailed("no preroll from \(description): \(pipeline.collected)") }
    defer { gst_sample_unref(sample) }
    let text = gst_caps_to_string(caps)!
    defer { g_free(text) }
    return String(cString: text)
}

/// moqsink publishes, for the caps of each codec, the catalog entry the hang catalog
/// expects: checked end to end through an in-process relay, by reading catalog.json.
@Suite("moqsink: caps → catalog", .serialized, .timeLimit(.minutes(3)))
struct MoqSinkCatalogTests {
    static let raw = "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
    static let audio = "audiotestsrc num-buffers=4 ! audio/x-raw,rate=48000,channels=2"

    static let cases: [(String, String)] = [
        ("avc1", raw + " ! x264enc ! h264parse ! video/x-h264,stream-format=avc,alignment=au"),
        ("avc3", raw + " ! x264enc ! h264parse ! video/x-h264,stream-format=byte-stream,alignment=au"),
        (
            "hvc1",
            raw
                + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=hvc1,alignment=au"
        ),
        (
            "hev1",
            raw
                + " ! x265enc speed-preset=ultrafast tune=zerolatency ! h265parse ! video/x-h265,stream-format=byte-stream,alignment=au"
        ),
        (
            "av01",
            "videotestsrc num-buffers=1 ! video/x-raw,format=I420,width=160,height=120,framerate=30/1"
                + " ! av1enc cpu-used=8 usage-profile=realtime ! av1parse"
        ),
        ("vp8", raw + " ! vp8enc deadline=1"),
        ("vp9", raw + " ! vp9enc deadline=1"),
        ("opus", audio + " ! opusenc"),
        ("aac", audio + " ! voaacenc ! aacparse ! audio/mpeg,stream-format=raw"),
        ("mp3", "audiotestsrc num-buffers=4 ! audio/x-raw,rate=44100,channels=2 ! lamemp3enc ! mpegaudioparse"),
    ]

    @Test("every supported codec becomes its catalog rendition", arguments: cases)
    func catalogEntry(family: String, source: String) async throws {
        let caps = try await encodedCaps(source)
        let expected = try MediaFormat.rendition(forCaps: caps)
        #expect(expected.family == family)

        try await scoped(
            try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            let broadcast = "catalog/\(family)"
            // The harness starts the element as soon as it has it: configure it first.
            let element = gst_element_factory_make("moqsink", nil)!
            setProperty(element, "url", "moql://127.0.0.1:\(relay.port)/anon")
            setProperty(element, "broadcast", broadcast)
            setProperty(element, "tls-fingerprint", relay.fingerprint)
            let harness = gst_harness_new_with_element(element, "sink_%u", nil)!
            defer { gst_harness_teardown(harness) }
            gst_object_unref(element)
            gst_harness_set_src_caps_str(harness, caps)

            let session = try await MoqSession.connect(
                "moql://127.0.0.1:\(relay.port)/anon",
                options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
            defer { session.close() }
            try await session.waitForBroadcast(broadcast)
            let catalogTrack = session.subscribe(broadcast: broadcast, track: HangCatalog.trackName)
            guard let group = try await catalogTrack.consumer(maxLatencyMs: 0).nextGroup(),
                let frame = try await group.nextFrame()
            else {
                Issue.record("no catalog")
                return
            }
            let catalog = try HangCatalog(json: frame.payload.array)
            let name = "0.\(family)"
            let published = catalog.renditions.first { $0.name == name }
            #expect(published?.config == expected.config, "caps \(caps) → \(catalog.jsonString())")
            #expect(catalogTrack.track.info?.timescale == 1000)
            switch expected.config {
            case .video(let v):
                #expect(v.codedWidth != nil && v.codedHeight != nil)
                #expect(v.container == .legacy)
            case .audio(let a):
                #expect(a.sampleRate > 0 && a.numberOfChannels > 0)
            }
        }
    }

    @Test("the catalog strings for the formats the Rust publisher writes")
    func knownStrings() throws {
        let avc = try MediaFormat.rendition(
            forCaps:
                "video/x-h264, stream-format=avc, alignment=au, width=320, height=240, framerate=30/1, codec_data=(buffer)0142c00dffe100116742c00d8c68141f26a0c020c0f08846a001000468ce3c80"
        )
        #expect(avc.codec == "avc1.42c00d")
        #expect(
            avc.codecDescription.map { Hex.encode($0.array) }
                == "0142c00dffe100116742c00d8c68141f26a0c020c0f08846a001000468ce3c80")
        let opus = try MediaFormat.rendition(forCaps: "audio/x-opus, rate=48000, channels=2, channel-mapping-family=0")
        #expect(opus.codec == "opus")
        // Without a streamheader the pre-skip is unknown (0); opusenc's caps carry it.
        #expect(opus.codecDescription.map { Array($0.array.prefix(10)) } == Array(Hex.decode("4f707573486561640102")!))
    }

    @Test("a pad's track property names its track")
    func trackProperty() async throws {
        try await scoped(
            try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            let pipeline = try TestPipeline(
                "moqsink name=m url=moql://127.0.0.1:\(relay.port)/anon broadcast=named tls-fingerprint=\(relay.fingerprint) sink_0::track=camera "
                    + "videotestsrc is-live=true ! video/x-raw,format=I420,width=160,height=120 ! x264enc tune=zerolatency ! h264parse ! m.sink_0"
            )
            #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
            let session = try await MoqSession.connect(
                "moql://127.0.0.1:\(relay.port)/anon",
                options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
            defer { session.close() }
            try await session.waitForBroadcast("named")
            let catalogTrack = session.subscribe(broadcast: "named", track: HangCatalog.trackName)
            // A budget: moqsink may publish the catalog again at once (its bitrate known), and a reader
            // with none moves past a group a newer one overtakes, even one it holds (seen under TSan).
            let consumer = catalogTrack.consumer(maxLatencyMs: 10_000)
            let group = try #require(try await consumer.nextGroup(), "no catalog group")
            let frame = try #require(try await group.nextFrame(), "an empty catalog group")
            let catalog = try HangCatalog(json: frame.payload.array)
            #expect(catalog.renditions.map(\.name) == ["camera"])
            pipeline.setState(GST_STATE_NULL)
        }
    }
}

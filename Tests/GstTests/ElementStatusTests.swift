// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Synchronization
import Testing

/// Reads a `guint64` property.
func uint64Property(_ object: UnsafeMutableRawPointer, _ name: String) -> UInt64 {
    var value = GValue()
    g_value_init(&value, swiftmoq_type_uint64())
    defer { g_value_unset(&value) }
    g_object_get_property(object.assumingMemoryBound(to: GObject.self), name, &value)
    return UInt64(g_value_get_uint64(&value))
}

/// Reads a numeric field of a structure property (`connection-stats`, `stats`).
func structureField(_ element: UnsafeMutablePointer<GstElement>, _ property: String, _ field: String) -> Double? {
    guard let text = stringProperty(element, property), let range = text.range(of: "\(field)=(") else { return nil }
    let rest = text[range.upperBound...]
    guard let close = rest.firstIndex(of: ")") else { return nil }
    return Double(rest[rest.index(after: close)...].prefix { $0 != "," && $0 != ";" })
}

/// moq-gst 0.4.9's status surface on both elements: `connection-stats`, `sessions`, the estimated
/// rates (and their pre-0.4.9 names), `quic-idle-timeout`/`quic-keep-alive`, and moqsink's per-pad
/// `track-status`/`track-error`.
@Suite("Element status (moq-gst's names)", .serialized, .timeLimit(.minutes(3)))
struct ElementStatusTests {
    @Test("connection-stats, sessions and the estimated rates on moqsink and moqsrc")
    func connectionStats() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "status")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=status "
                    + "s.video_0 ! fakesink sync=false s.audio_0 ! fakesink sync=false")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            let sink = publisher.element("m")!
            let src = player.element("s")!
            defer {
                gst_object_unref(sink)
                gst_object_unref(src)
            }
            var notified = 0
            let counter = Unmanaged.passRetained(NotifyCounter())
            defer { counter.release() }
            g_signal_connect_data(
                sink, "notify::estimated-send-rate",
                unsafeBitCast(
                    { (_: UnsafeMutableRawPointer?, _: UnsafeMutableRawPointer?, data: UnsafeMutableRawPointer?) in
                        Unmanaged<NotifyCounter>.fromOpaque(data!).takeUnretainedValue().count.add(
                            1, ordering: .relaxed)
                    }
                        as @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
                        ->
                        Void,
                    to: GCallback.self), counter.toOpaque(), nil, GConnectFlags(rawValue: 0))
            try await eventually("both elements report their connection", timeout: .seconds(20)) {
                notified = counter.takeUnretainedValue().count.load(ordering: .relaxed)
                return uint64Property(sink, "estimated-send-rate") > 0 && uint64Property(src, "estimated-recv-rate") > 0
                    && (structureField(src, "connection-stats", "bytes-received") ?? 0) > 10_000 && notified > 0
            }
            for element in [sink, src] {
                #expect(uint64Property(element, "sessions") == 1)
                #expect((structureField(element, "connection-stats", "rtt-us") ?? 0) > 0)
                for field in ["bytes-sent", "bytes-received", "packets-sent", "packets-received"] {
                    #expect((structureField(element, "connection-stats", field) ?? 0) > 0, "\(field)")
                }
                #expect(structureField(element, "connection-stats", "packets-lost") != nil)
            }
            // The sink sends media, the player mostly receives it (keep-alives alone are under 1 kbit/s;
            // the bound leaves room for a slow moment: 25 kbit/s under ThreadSanitizer, 5.9 kbit/s with
            // the GStreamer suites in parallel on two cores).
            #expect((structureField(sink, "connection-stats", "rate-bps") ?? 0) > 2_000)
            #expect((structureField(src, "connection-stats", "recv-rate-bps") ?? 0) > 2_000)
            // moq-gst's names before 0.4.9 read the same figures.
            #expect(uint64Property(sink, "estimated-send-bitrate") > 0)
            #expect(uint64Property(src, "estimated-recv-bitrate") > 0)
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
            // Stopped: the connection figures are zeros, the session count stays.
            #expect(uint64Property(sink, "estimated-send-rate") == 0)
            #expect(structureField(sink, "connection-stats", "bytes-sent") == 0)
            #expect(uint64Property(sink, "sessions") == 1)
        }
    }

    @Test(
        "quic-idle-timeout and quic-keep-alive reach the connection: without keep-alives an idle player's session times out"
    )
    func idleTimeoutAndKeepAlive() async throws {
        // The relay sends no PINGs of its own: a connection's idle timeout is at least three probe
        // timeouts, and where the handshake's round trip is slow (under ThreadSanitizer, 0.4 s and
        // more) that outlasts a relay's 3 s keep-alive, whose PINGs would then hold the quiet
        // player's session open forever (CI saw one session in 20 s).
        var configuration = MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)
        configuration.keepAliveInterval = .zero
        try await withRelay(try MoqRelay.start(configuration)) {
            (relay) async throws in
            // Nobody publishes: the players wait for the broadcast and nothing flows but keep-alives.
            let quiet = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=nobody timeout=0 quic-idle-timeout=1000 "
                    + "quic-keep-alive=0 ! fakesink")
            let alive = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=nobody timeout=0 quic-idle-timeout=1000 "
                    + "quic-keep-alive=250 ! fakesink")
            let quietSrc = quiet.element("s")!
            let aliveSrc = alive.element("s")!
            defer {
                gst_object_unref(quietSrc)
                gst_object_unref(aliveSrc)
            }
            #expect(
                uintProperty(quietSrc, "quic-idle-timeout") == 1000 && uintProperty(quietSrc, "quic-keep-alive") == 0)
            _ = quiet.setState(GST_STATE_PAUSED)
            _ = alive.setState(GST_STATE_PAUSED)
            // Idle for a second: the quiet session closes and the element reconnects, twice; meanwhile
            // the keep-alives hold the other one's first session. An idle timeout is at least three probe
            // timeouts, so a loaded machine (a slow handshake's round trip) stretches it: `make test` once
            // saw one session in 20 s with the relay's PINGs off; the detail says how long the round trip was.
            try await eventually(
                "the quiet player's third session", timeout: .seconds(60),
                detail: {
                    // A session held open shows traffic on a player that should be idle.
                    "sessions \(uint64Property(quietSrc, "sessions")), rtt-us "
                        + "\(structureField(quietSrc, "connection-stats", "rtt-us") ?? -1), packets-received "
                        + "\(structureField(quietSrc, "connection-stats", "packets-received") ?? -1), recv-rate-bps "
                        + "\(structureField(quietSrc, "connection-stats", "recv-rate-bps") ?? -1)"
                }
            ) {
                uint64Property(quietSrc, "sessions") >= 3
            }
            #expect(uint64Property(aliveSrc, "sessions") == 1)
            quiet.setState(GST_STATE_NULL)
            alive.setState(GST_STATE_NULL)
        }
    }

    @Test("defaults: quic-idle-timeout 10 s, quic-keep-alive 1 s (the client's own)")
    func defaults() throws {
        let pipeline = try TestPipeline("moqsrc name=s ! fakesink moqsink name=m")
        for name in ["s", "m"] {
            let element = pipeline.element(name)!
            defer { gst_object_unref(element) }
            #expect(uintProperty(element, "quic-idle-timeout") == 10_000)
            #expect(uintProperty(element, "quic-keep-alive") == 1_000)
            #expect(uint64Property(element, "sessions") == 0)
        }
    }

    @Test("track-status: publishing, then ended at EOS; an unsupported input is error with track-error saying why")
    func trackStatus() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let good = try TestPipeline(
                "audiotestsrc num-buffers=50 ! audio/x-raw,rate=48000,channels=2 ! opusenc ! "
                    + "moqsink name=m \(relay.elementProperties) broadcast=tracks")
            let sink = good.element("m")!
            defer { gst_object_unref(sink) }
            let pad = gst_element_get_static_pad(sink, "sink_0")!
            defer { gst_object_unref(pad) }
            let padObject = UnsafeMutableRawPointer(pad)
            #expect(padStatus(padObject) == "waiting")
            #expect(good.play() != GST_STATE_CHANGE_FAILURE)
            try await eventually("the pad publishes") {
                padStatus(padObject) == "publishing" || padStatus(padObject) == "ended"
            }
            try await good.waitFor { $0.isEOS }
            #expect(padStatus(padObject) == "ended")
            #expect(padError(padObject) == nil)
            good.setState(GST_STATE_NULL)
            #expect(padStatus(padObject) == "waiting")

            // Raw AAC without its AudioSpecificConfig cannot be described in a catalog.
            let bad = try TestPipeline(
                "appsrc name=src is-live=true format=time caps=audio/mpeg,mpegversion=4,stream-format=raw,rate=48000,channels=2 "
                    + "! moqsink name=m \(relay.elementProperties) broadcast=bad")
            #expect(bad.play() != GST_STATE_CHANGE_FAILURE)
            let badSink = bad.element("m")!
            defer { gst_object_unref(badSink) }
            try? AppSource(bad.base, name: "src").push([UInt8](repeating: 0, count: 16))  // the ERROR is what counts
            try await bad.waitFor { $0.isError }
            let badPad = gst_element_get_static_pad(badSink, "sink_0")!
            defer { gst_object_unref(badPad) }
            #expect(padStatus(UnsafeMutableRawPointer(badPad)) == "error")
            #expect(padError(UnsafeMutableRawPointer(badPad))?.contains("codec_data") == true)
            bad.setState(GST_STATE_NULL)
        }
    }

    func padStatus(_ pad: UnsafeMutableRawPointer) -> String? {
        stringProperty(pad.assumingMemoryBound(to: GstElement.self), "track-status")
    }

    func padError(_ pad: UnsafeMutableRawPointer) -> String? {
        stringProperty(pad.assumingMemoryBound(to: GstElement.self), "track-error")
    }
}

/// Counts `notify::` emissions (from any thread).
final class NotifyCounter: Sendable {
    let count = Atomic<Int>(0)
}

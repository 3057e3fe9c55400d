// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqPipeline
import MoqTestKit
import SwiftMoQ

/// One viewer of `moqbench join`: started, played for a while, ended with EOS, measured.
struct Viewing {
    /// A video frame rendered: when (monotonic ns) and how long after its capture (ms).
    struct Rendered {
        var renderNs: UInt64
        var glassMs: Double
    }

    var video: [Rendered] = []
    var audioGlassMs: [Double] = []
    var firstFrameMs = Double.nan
    var firstGlassMs = Double.nan
    var audio: RenderedAudioReport?
    var audioPushedMs = 0.0
    var audioPublishedMs = 0.0
    var stats: Structure?

    /// The `join` event's fields.
    var fields: [(String, JSONField)] {
        func stat(_ name: String) -> Double {
            stats?[name]?.doubleValue ?? stats?[name]?.intValue.map(Double.init) ?? 0
        }
        return [
            ("ttff_ms", .double(firstFrameMs)), ("first_ms", .double(firstGlassMs)),
            ("video_ms", .doubles(video.map(\.glassMs))), ("audio_ms", .doubles(audioGlassMs)),
            // What was heard: from the first sound the tone started in (a fresh Opus decoder's first
            // milliseconds are not tone-like: the tone alone was 1-5 ms short in a few joins).
            ("audio_rendered_ms", .double(audio?.tone.heardMs ?? 0)),
            ("audio_tone_ms", .double(audio?.tone.toneMs ?? 0)),
            ("audio_pushed_ms", .double(audioPushedMs)),
            ("audio_published_ms", .double(audioPublishedMs)),
            ("discontinuities", .int(audio?.tone.discontinuities ?? -1)), ("resyncs", .int(audio?.resyncs ?? -1)),
            ("silence_gaps", .int(audio?.tone.silenceGaps ?? -1)), ("underrun_ms", .double(audio?.underrunMs ?? 0)),
            ("retargets", .double(stat("retargets"))), ("catch_up_drops", .double(stat("catch-up-drops"))),
            ("margin_ms", .double(stat("latency-margin-ms"))),
            // Where the device heard the tone start and how long (samples): against the audio sink's
            // own log of where it wrote each buffer, this says where a shortfall lies.
            ("tone_start_sample", .int(Int(audio?.tone.toneStartSample ?? -1))),
            ("tone_samples", .int(Int(audio?.tone.toneSamples ?? 0))),
        ]
    }

    /// Plays `source` for `seconds` (running `during` meanwhile), then sends EOS and measures.
    static func play(
        source: String, seconds: Double, publisherBase: UInt64, audioBufferUs: Int?,
        during: @escaping @Sendable () async -> Void = {}
    ) async throws -> Viewing {
        // Audio, when played, goes to a sound card whose buffer is `audioBufferUs` (GstAudioBaseSink's
        // buffer-time: 200 ms by default, which every sink of the pipeline then waits for).
        let audio = audioBufferUs.map {
            "src.audio_0 ! queue ! decodebin ! audioconvert ! audioresample ! "
                + "moqtestaudiosink name=out buffer-time=\($0) latency-time=10000"
        }
        let player = Pipeline(
            launch: "moqsrc name=src \(source) "
                + "src.video_0 ! queue ! decodebin ! queue ! fakesink name=display sync=true " + (audio ?? ""))
        let started = Monotonic.now()
        try player.start()
        defer { player.stop() }
        let display = StageProbe(key: .publisherMeta)
        let audioOut = StageProbe(key: .publisherMeta)
        let deadline = ContinuousClock.now + .seconds(20)
        var attached = (video: false, audio: audio == nil)
        while !(attached.video && attached.audio) {
            if ContinuousClock.now > deadline { throw BenchError.runtime("no pads within 20 s") }
            if let failure = player.collectedMessages.first(where: \.isError) { throw BenchError.runtime("\(failure)") }
            if !attached.video, let sink = try? player.element(named: "display") {
                attached.video = (try? display.attach(to: sink, pad: "sink")) != nil
            }
            if !attached.audio, let src = try? player.element(named: "src"), src.pad("audio_0") != nil {
                attached.audio = (try? audioOut.attach(to: src, pad: "audio_0")) != nil
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        let extra = Task { await during() }
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        await extra.value
        guard let running = player.runningTime else { throw BenchError.runtime("the player has no clock") }
        let playerBase = Monotonic.now() - UInt64(running.nanoseconds)
        let latency = try renderDelay(player)
        var viewing = Viewing()
        viewing.stats = try? player.element(named: "src").property("stats")?.structureValue
        try player.sendEOS()
        try? await player.waitForEOS(timeout: .seconds(10))
        if audio != nil { viewing.audio = try? await player.renderedAudioAfterTone(named: "out") }
        func ms(_ ns: UInt64, since: UInt64) -> Double { Double(Int64(bitPattern: ns &- since)) / 1e6 }
        // A synchronised sink renders at the buffer's running time plus the pipeline latency, or at
        // once when the buffer arrives later than that.
        for key in display.keys.sorted() {
            guard let arrived = display.time(of: key), let running = display.pts(of: key) else { continue }
            let render = max(arrived, playerBase + running + latency)
            viewing.video.append(Rendered(renderNs: render, glassMs: ms(render, since: publisherBase + key * 1000)))
        }
        viewing.video.sort { $0.renderNs < $1.renderNs }
        if let first = viewing.video.first {
            viewing.firstFrameMs = ms(first.renderNs, since: started)
            viewing.firstGlassMs = first.glassMs
        }
        let audioKeys = audioOut.keys.sorted()
        for key in audioKeys {
            guard let running = audioOut.pts(of: key) else { continue }
            viewing.audioGlassMs.append(ms(playerBase + running + latency, since: publisherBase + key * 1000))
        }
        viewing.audioPushedMs = Double(audioKeys.count) * 20
        if let first = audioKeys.first, let last = audioKeys.last {
            viewing.audioPublishedMs = Double(last - first) / 1000 + 20
        }
        return viewing
    }

    /// The latency every sink of the player waits: the pipeline's (the LATENCY query's minimum over
    /// its sinks; the audio sink's buffer is most of it), in ns.
    private static func renderDelay(_ pipeline: Pipeline) throws -> UInt64 {
        guard let element = pipeline.gstPipeline, let query = gst_query_new_latency() else {
            throw BenchError.runtime("cannot query the player's latency")
        }
        defer { gst_query_unref(query) }
        guard gst_element_query(element.pointer, query) != 0 else { throw BenchError.runtime("no latency") }
        var live: gboolean = 0
        var minimum: GstClockTime = 0
        var maximum: GstClockTime = 0
        gst_query_parse_latency(query, &live, &minimum, &maximum)
        return UInt64(minimum)
    }
}

/// SplitMix64 for the join points (``SeededGenerator``'s algorithm, here as a bench-local type).
typealias SplitMix = SeededGenerator

// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqTestKit
import Testing

/// `moqtestaudiosink`: a GstAudioSink on an emulated sound card that measures the sine it
/// renders. Real time (the device plays at the sample rate): run in the media phase, one
/// test at a time.
@Suite("RenderedAudioSink: what a GstAudioBaseSink renders", .serialized, .timeLimit(.minutes(2)))
struct RenderedAudioSinkTests {
    init() { RenderedAudioSink.register() }

    static let f = ToneTracker.defaultFrequency
    /// 3 s of 20 ms buffers at 48 kHz.
    static let buffers = 150

    static func source(_ name: String = "src", format: String = "F32LE", buffers: Int = buffers) -> String {
        "audiotestsrc name=\(name) is-live=true wave=sine freq=\(f) samplesperbuffer=960 num-buffers=\(buffers) "
            + "! audio/x-raw,format=\(format),rate=48000,channels=1"
    }

    /// Runs `description` to EOS (after `prepare` on the running pipeline) and reads the sink `out`.
    static func render(_ description: String, prepare: (Pipeline) throws -> Void = { _ in }) async throws
        -> RenderedAudioReport
    {
        let pipeline = Pipeline(launch: description)
        // In READY no streaming thread runs yet: what `prepare` attaches sees every buffer, and
        // the threads start after it (a hand-over ThreadSanitizer sees).
        try pipeline.start(.ready)
        defer { pipeline.stop() }
        try prepare(pipeline)
        try pipeline.setState(.playing)
        try await pipeline.waitForEOS(timeout: .seconds(20))
        let report = try await pipeline.renderedAudioAfterTone(named: "out")
        print("moqtestaudiosink: \(report)")
        return report
    }

    /// Whether the machine kept up: the device was never starved for long and GstAudioBaseSink
    /// corrected no clock skew. Two shared cores under load (or ThreadSanitizer) make real
    /// glitches, which a sound card would play too; the exact checks then give way to those
    /// that do not depend on it.
    static func keptUp(_ r: RenderedAudioReport) -> Bool {
        let keptUp = r.underrunMs < 50 && r.warnings == r.resyncs
        if !keptUp {
            print("moqtestaudiosink: the machine did not keep up (\(r.firstWarnings)); exact checks skipped")
        }
        return keptUp
    }

    /// When the machine kept up: the tone is continuous (no discontinuity, silence or resync) and
    /// lasts `toneMs` (± `within`).
    static func expectContinuous(
        _ r: RenderedAudioReport, toneMs: Double, within: Double, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard keptUp(r) else { return }
        #expect(
            r.tone.discontinuities == 0 && r.tone.silenceGaps == 0 && r.resyncs == 0, "\(r)",
            sourceLocation: sourceLocation)
        #expect(abs(r.tone.toneMs - toneMs) < within, "\(r)", sourceLocation: sourceLocation)
    }

    @Test("a live sine renders as continuous tone for its duration: no discontinuity, no silence, no resync")
    func continuousTone() async throws {
        let r = try await Self.render(Self.source() + " ! audioconvert ! moqtestaudiosink name=out")
        #expect(r.rate == 48_000 && r.channels == 1 && r.format == "F32LE")
        #expect(abs(r.tone.amplitude - 0.8) < 0.01, "\(r)")
        #expect(r.tone.renderedSamples >= r.tone.toneSamples)
        Self.expectContinuous(r, toneMs: 3_000, within: 1)
    }

    @Test("stereo 16-bit renders the same (channel 0 is analysed)")
    func stereo16Bit() async throws {
        let r = try await Self.render(
            "audiotestsrc is-live=true wave=sine freq=\(Self.f) samplesperbuffer=960 num-buffers=100 "
                + "! audio/x-raw,format=S16LE,rate=48000,channels=2 ! moqtestaudiosink name=out")
        #expect(r.format == "S16LE" && r.channels == 2)
        Self.expectContinuous(r, toneMs: 2_000, within: 1)
    }

    @Test("through opusenc ! opusdec: continuous tone, 20 ms frames and all")
    func throughOpus() async throws {
        let r = try await Self.render(
            Self.source(format: "S16LE") + " ! opusenc ! opusdec ! audioconvert ! moqtestaudiosink name=out")
        Self.expectContinuous(r, toneMs: 3_000, within: 10)
    }

    @Test("the stats property carries the same numbers")
    func statsProperty() async throws {
        let pipeline = Pipeline(launch: Self.source(buffers: 50) + " ! moqtestaudiosink name=out")
        try pipeline.start()
        defer { pipeline.stop() }
        try await pipeline.waitForEOS(timeout: .seconds(20))
        let report = try await pipeline.renderedAudioAfterTone(named: "out")
        print("moqtestaudiosink: \(report)")
        let sink = try pipeline.element(named: "out")
        #expect(sink.factoryName == RenderedAudioSink.factoryName)
        #expect(try sink.property("frequency")?.doubleValue == Self.f)
        let stats = try #require(try sink.property("stats")?.structureValue)
        #expect(stats.name == "application/x-moqtestaudiosink-stats")
        #expect(stats["rate"]?.intValue == 48_000 && stats["channels"]?.intValue == 1)
        #expect(stats["tone-ms"]?.doubleValue == report.tone.toneMs)
        #expect(stats["discontinuities"]?.intValue == Int64(report.tone.discontinuities))
        #expect(stats["resyncs"]?.intValue == Int64(report.resyncs))
        #expect((stats["rendered-samples"]?.intValue ?? 0) >= 48_000)
        #expect(stats["frequency-hz"]?.doubleValue == Self.f)
        for field in ["silence-ms", "longest-silence-ms", "underruns", "amplitude", "first-discontinuities", "format"] {
            #expect(stats[field] != nil, "\(field) missing from \(stats)")
        }
        guard Self.keptUp(report) else { return }
        #expect(stats["discontinuities"]?.intValue == 0 && stats["resyncs"]?.intValue == 0, "\(stats)")
        #expect(stats["silence-gaps"]?.intValue == 0)
        #expect(abs((stats["tone-ms"]?.doubleValue ?? 0) - 1_000) < 1, "\(stats)")
    }

    /// GstAudioBaseSink writes each buffer where the previous one ended while the timestamps
    /// drift by less than alignment-threshold (40 ms), or for discont-wait (1 s) after that;
    /// then it resyncs to the timestamps, 375 ms behind, where everything falls behind the
    /// device's read position and is dropped: silence for the rest of the stream.
    @Test("20 ms buffers stamped 15 ms apart: contiguous for a while, then a resync and silence")
    func compressedTimestamps() async throws {
        let r = try await Self.render(Self.source() + " ! audioconvert ! moqtestaudiosink name=out") { pipeline in
            try BufferTamper.attach(.spacing(.milliseconds(15)), to: pipeline, element: "src")
        }
        #expect(r.resyncs >= 1, "\(r)")
        #expect(r.tone.toneMs - r.tone.silenceMs < 2_500, "3 s of tone played whole: \(r)")
    }

    /// The other way: each resync jumps forward to the timestamps, and the device plays the
    /// silence GstAudioBaseSink leaves in the ring buffer until the tone resumes.
    @Test("20 ms buffers stamped 25 ms apart: a resync forward every 1.2 s, each a 240 ms silence and a phase step")
    func stretchedTimestamps() async throws {
        let r = try await Self.render(Self.source() + " ! audioconvert ! moqtestaudiosink name=out") { pipeline in
            try BufferTamper.attach(.spacing(.milliseconds(25)), to: pipeline, element: "src")
        }
        #expect(r.resyncs >= 1 && r.tone.discontinuities >= 1, "\(r)")
        // (A clock-skew correction on a starved machine moves a resync by its 20 ms.)
        #expect(abs(r.tone.longestSilenceMs - 240) < 30, "\(r)")
        guard Self.keptUp(r) else { return }
        #expect(abs(r.tone.longestSilenceMs - 240) < 1, "\(r)")
        #expect(r.resyncs >= 2, "\(r)")
        #expect(r.tone.silenceGaps == r.resyncs && r.tone.discontinuities == r.resyncs, "\(r)")
        #expect(abs(r.tone.silenceMs - 240 * Double(r.tone.silenceGaps)) < 3, "\(r)")
    }

    @Test("a dropped buffer is a discontinuity of 960 samples modulo the period")
    func droppedBuffer() async throws {
        let r = try await Self.render(Self.source() + " ! audioconvert ! moqtestaudiosink name=out") { pipeline in
            try BufferTamper.attach(.drop([60]), to: pipeline, element: "src")
        }
        #expect(r.tone.discontinuities >= 1, "\(r)")
        guard Self.keptUp(r) else { return }
        #expect(r.tone.discontinuities == 1, "\(r)")
        let period = 48_000 / Self.f
        let expected = (960 / period - (960 / period).rounded()) * period
        if let d = r.tone.firstDiscontinuities.first {
            #expect(abs(d.shiftSamples - expected) < 1, "\(d) vs \(expected)")
        }
    }

    @Test("a sink that is not a moqtestaudiosink is refused by name")
    func wrongElement() async throws {
        let pipeline = Pipeline(launch: "audiotestsrc is-live=true ! fakesink name=out")
        try pipeline.start()
        defer { pipeline.stop() }
        #expect(throws: TestKitError.self) { try pipeline.renderedAudio(named: "out") }
    }
}

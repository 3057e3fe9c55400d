// SPDX-License-Identifier: MIT
package import CGStreamer
import GstSupport

/// What a `moqtestaudiosink` rendered: the tone as a ``ToneTracker`` followed it through the
/// samples the emulated device played, and how GstAudioBaseSink got there.
///
/// Read it with ``RenderedAudioSink/report(of:)`` (this process), or as the element's `stats`
/// structure (the same numbers, with the discontinuities listed as text).
public struct RenderedAudioReport: Sendable, Equatable, CustomStringConvertible {
    /// The tone: rendered samples, the tone's span, silences and phase discontinuities.
    public var tone: ToneReport
    /// GstAudioBaseSink's "Unexpected discontinuity in audio timestamps …, resyncing" warnings:
    /// a buffer's timestamp was further than `alignment-threshold` (40 ms) from where the
    /// previous one ended, for longer than `discont-wait` (1 s), and the sink jumped to it.
    public var resyncs: Int
    /// Every WARNING GstAudioBaseSink logged about this sink (the resyncs among them; others
    /// are clock-skew corrections, seen when its ring buffer's thread is starved).
    public var warnings: Int
    /// The first four of them, as logged.
    public var firstWarnings: [String]
    /// Times the emulated device ran dry because the ring buffer's thread wrote late (a real
    /// device would have clicked; the played samples do not include the gap).
    public var underruns: Int
    /// How long the device ran dry in all, in ms.
    public var underrunMs: Double
    /// The negotiated sample rate (0 before caps).
    public var rate: Int
    /// The negotiated channel count (only channel 0 is analysed).
    public var channels: Int
    /// `F32LE` or `S16LE`.
    public var format: String

    /// A report with these values.
    public init(
        tone: ToneReport, resyncs: Int, warnings: Int, firstWarnings: [String] = [], underruns: Int, underrunMs: Double,
        rate: Int, channels: Int, format: String
    ) {
        self.tone = tone
        self.resyncs = resyncs
        self.warnings = warnings
        self.firstWarnings = firstWarnings
        self.underruns = underruns
        self.underrunMs = underrunMs
        self.rate = rate
        self.channels = channels
        self.format = format
    }

    /// One line: the tone's report, then resyncs and underruns.
    public var description: String {
        "\(tone); \(resyncs) resyncs (\(warnings) warnings); \(underruns) underruns (\((underrunMs * 10).rounded() / 10) ms); "
            + "\(format) \(rate) Hz × \(channels)"
    }

    /// The `stats` structure (`application/x-moqtestaudiosink-stats`).
    package func structure() -> UnsafeMutablePointer<GstStructure> {
        makeStructure(
            "application/x-moqtestaudiosink-stats",
            [
                ("rendered-samples", .uint64(UInt64(tone.renderedSamples))),
                ("tone-ms", .double(tone.toneMs)),
                ("tone-start-ms", .double(tone.toneStartMs ?? -1)),
                ("silence-gaps", .uint64(UInt64(tone.silenceGaps))),
                ("silence-ms", .double(tone.silenceMs)),
                ("longest-silence-ms", .double(tone.longestSilenceMs)),
                ("discontinuities", .uint64(UInt64(tone.discontinuities))),
                (
                    "first-discontinuities",
                    .string(tone.firstDiscontinuities.map(\.description).joined(separator: "; "))
                ),
                ("resyncs", .uint64(UInt64(resyncs))),
                ("warnings", .uint64(UInt64(warnings))),
                ("first-warnings", .string(firstWarnings.joined(separator: "; "))),
                ("underruns", .uint64(UInt64(underruns))),
                ("underrun-ms", .double(underrunMs)),
                ("amplitude", .double(tone.amplitude)),
                ("rate", .int(Int32(rate))),
                ("channels", .int(Int32(channels))),
                ("format", .string(format)),
                ("frequency-hz", .double(tone.frequency)),
            ])
    }
}

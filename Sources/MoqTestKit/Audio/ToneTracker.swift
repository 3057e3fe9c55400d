// SPDX-License-Identifier: MIT
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Follows a sine of known frequency through audio as it was rendered, and reports where it
/// was silent and where its phase jumped: a dropped or repeated stretch of samples, a gap,
/// a timeline that restarted, all show as a phase step of the tone.
///
/// Every block of ``blockSize`` samples (5 ms) is fitted, by least squares, with
/// `A·sin(ωn) + B·cos(ωn)` at the known ω, where `n` counts samples from the first one fed:
/// the fit gives the block's amplitude `√(A²+B²)` and phase `atan2(B, A)`. A continuous tone
/// keeps one phase from block to block; a stream that skipped `d` samples continues with a
/// phase `ω·d` ahead (repeated or inserted samples: behind). A step larger than
/// ``thresholdSamples`` (as a time shift of the tone, modulo its period) is counted once the
/// next block confirms it, so a block that straddles the splice (an intermediate phase) is
/// not counted on its own.
///
/// A block is tone when the fitted sine carries at least half of its energy (another sound is
/// not) and its amplitude is at least half of the tone's, which is read from the signal (the
/// largest such block amplitude seen); its phase is used above 0.8 of it, except in the first
/// two tone blocks after silence (a decoder settles as tone starts). Silence is sample by
/// sample: a run of at least 1 ms below 5 % of that amplitude (a sine stays that low for at
/// most two samples around a zero crossing at 48 kHz), counted when tone follows it.
///
/// ## The frequency
///
/// ``defaultFrequency`` is `50 · (8 + (√5−1)/2) ≈ 430.9017 Hz`. A whole 20 ms Opus frame
/// (960 samples at 48 kHz) holds `0.02 · f = 8.618…` periods, so dropping or repeating `k`
/// frames shifts the tone by the fractional part of `k · 0.618…` periods. With the golden
/// ratio those fractions stay as far from whole periods as any number can (the three-distance
/// theorem): for every `k` from 1 to 20 the shift is at least 0.0344 periods (at `k` = 13;
/// `k` = 21 is the first to come closer), i.e. 3.8 samples of the 111.4-sample period at
/// 48 kHz, well above the 1.5-sample threshold. A frequency such as 400 or 450 Hz (8 or 9
/// whole periods per frame) would hide every whole-frame drop; 430 Hz would hide 5 frames
/// (8.6 periods each: 43 whole periods). It is a property of time, so it holds at any sample
/// rate; 10 ms steps (a ring buffer's segments) up to 40 of them shift the tone by at least
/// 1.9 samples. ~431 Hz also sits well inside every codec's band, with two periods per 5 ms
/// block for a well-conditioned fit.
public struct ToneTracker: Sendable {
    /// The frequency whose phase makes every drop or repeat of 1 to 20 whole 20 ms frames
    /// visible: `50 · (8 + (√5−1)/2)` Hz (see the type's documentation).
    public static let defaultFrequency = 50 * (8 + (5.0.squareRoot() - 1) / 2)

    /// The tracked tone (Hz).
    public let frequency: Double
    /// Samples per second of what is fed.
    public let sampleRate: Int
    /// Samples per fitted block (5 ms).
    public let blockSize: Int
    /// The smallest phase step counted as a discontinuity, as a shift in samples.
    public let thresholdSamples: Double
    /// How many discontinuities ``ToneReport/firstDiscontinuities`` lists.
    public let listed: Int

    /// The lowest amplitude that can be tone (-60 dBFS).
    private static let floor = 1e-3
    /// The shortest run of quiet samples counted as silence (1 ms).
    private let minimumSilence: Int64
    /// The tone's period in samples.
    private let period: Double

    private var block: [Double] = []
    private var blockStart: Int64 = 0
    private var fed: Int64 = 0
    private var amplitude = 0.0
    private var reference: Double?
    private var candidate: (phase: Double, sample: Int64)?
    private var discontinuities = 0
    private var firstDiscontinuities: [ToneDiscontinuity] = []
    private var toneStart: Int64?
    /// The first loud sample of the sound the tone started in (no silence between).
    private var soundStart: Int64?
    private var toneEnd: Int64?
    private var quietSince: Int64?
    /// The first loud sample since the last silence.
    private var loudSince: Int64?
    /// Whether loud samples still extend the tone (the block after a tone block, until silence).
    private var extending = false
    /// Tone blocks still to skip before their phase counts (after the start or a silence).
    private var settling = 2
    /// Silences closed since the last tone block: inside the tone span only if tone follows.
    private var pendingSilences: [Int64] = []
    private var silences = 0
    private var silentSamples: Int64 = 0
    private var longestSilence: Int64 = 0

    /// A tracker of `frequency` in audio at `sampleRate`.
    ///
    /// - Parameters:
    ///   - thresholdSamples: the smallest phase step counted, as a shift in samples (1.5 by
    ///     default: far above what noise or a codec moves the phase of a 5 ms fit, below the
    ///     3.8 samples of the smallest whole-frame step at 48 kHz).
    ///   - listed: how many discontinuities the report lists with their time and size.
    public init(frequency: Double = defaultFrequency, sampleRate: Int, thresholdSamples: Double = 1.5, listed: Int = 8)
    {
        precondition(sampleRate > 0 && frequency > 0 && frequency < Double(sampleRate) / 2, "tone out of range")
        self.frequency = frequency
        self.sampleRate = sampleRate
        self.thresholdSamples = thresholdSamples
        self.listed = listed
        blockSize = max(16, sampleRate / 200)
        minimumSilence = Int64(max(1, sampleRate / 1000))
        period = Double(sampleRate) / frequency
        block.reserveCapacity(blockSize)
    }

    /// Feeds rendered samples (one channel, full scale ±1), in order.
    public mutating func feed<S: Sequence>(_ samples: S) where S.Element: BinaryFloatingPoint {
        for sample in samples {
            block.append(Double(sample))
            fed += 1
            if block.count == blockSize {
                analyse()
                blockStart += Int64(blockSize)
                block.removeAll(keepingCapacity: true)
            }
        }
    }

    /// What was rendered so far (a partial last block is analysed too, when at least half a block).
    public var report: ToneReport {
        var final = self
        if final.block.count >= blockSize / 2 { final.analyse() }
        return final.makeReport()
    }

    private func makeReport() -> ToneReport {
        let span = toneStart.flatMap { start in toneEnd.map { $0 - start + 1 } } ?? 0
        let heard = soundStart.flatMap { start in toneEnd.map { $0 - start + 1 } } ?? 0
        return ToneReport(
            sampleRate: sampleRate, frequency: frequency, renderedSamples: fed, amplitude: amplitude,
            toneStartSample: toneStart, toneSamples: span, soundStartSample: soundStart, heardSamples: heard,
            silenceGaps: silences, silenceSamples: silentSamples,
            longestSilenceSamples: longestSilence, discontinuities: discontinuities,
            firstDiscontinuities: firstDiscontinuities)
    }

    /// Fits the block, then follows amplitude, silence and phase.
    private mutating func analyse() {
        let (blockAmplitude, phase, share) = fit()
        // Tone: the tracked sine carries most of the block's energy, at a level of its own.
        let dominant = share >= 0.5 && blockAmplitude >= Self.floor
        // The amplitude is the signal's: a clearly larger block (the first after a fade-in or
        // a quiet start) restarts the phase reference rather than being compared with it.
        if dominant && blockAmplitude > amplitude * 1.1 {
            amplitude = blockAmplitude
            reference = nil
            candidate = nil
        } else if dominant {
            amplitude = max(amplitude, blockAmplitude)
        }
        let isTone = dominant && blockAmplitude >= 0.5 * amplitude
        let (firstLoud, lastLoud) = scanSilence(isTone: isTone)
        if isTone, let firstLoud, let lastLoud {
            if toneStart == nil {
                // The onset may lie in the block before (too little of it there to be tone).
                toneStart = loudSince.map { $0 >= blockStart - Int64(blockSize) ? $0 : firstLoud } ?? firstLoud
                // A sound may lead into it for longer (a decoder's fresh start is not tone-like for
                // a few ms): what is heard starts there.
                soundStart = min(loudSince ?? firstLoud, toneStart ?? firstLoud)
            }
            toneEnd = lastLoud
            for length in pendingSilences {
                silences += 1
                silentSamples += length
                longestSilence = max(longestSilence, length)
            }
            pendingSilences.removeAll()
        }
        extending = isTone && lastLoud != nil
        guard isTone else { return }
        // A decoder takes a few ms to settle when tone starts (Opus: ~2 samples of phase over
        // its first 15 ms), so the first two tone blocks after silence do not count.
        if settling > 0 {
            settling -= 1
        } else if blockAmplitude >= 0.8 * amplitude {
            follow(phase)
        }
    }

    /// Least-squares amplitude and phase of the tone in the current block, and the share of
    /// the block's energy the fitted sine carries.
    private func fit() -> (amplitude: Double, phase: Double, share: Double) {
        let cyclesPerSample = frequency / Double(sampleRate)
        let start = Double(blockStart) * cyclesPerSample
        let startFraction = start - start.rounded(.down)
        var ss = 0.0
        var cc = 0.0
        var sc = 0.0
        var xs = 0.0
        var xc = 0.0
        var xx = 0.0
        for (i, x) in block.enumerated() {
            let theta = 2 * Double.pi * (startFraction + Double(i) * cyclesPerSample)
            let s = sin(theta)
            let c = cos(theta)
            ss += s * s
            cc += c * c
            sc += s * c
            xs += x * s
            xc += x * c
            xx += x * x
        }
        let determinant = ss * cc - sc * sc
        guard determinant > 1e-9, xx > 0 else { return (0, 0, 0) }
        let a = (xs * cc - xc * sc) / determinant
        let b = (xc * ss - xs * sc) / determinant
        // The fitted sine's energy is its projection on the block: a·Σxs + b·Σxc.
        return ((a * a + b * b).squareRoot(), atan2(b, a), (a * xs + b * xc) / xx)
    }

    /// Follows quiet runs through the block; returns its first and last loud samples. In the
    /// block after a tone block, loud samples before any silence still belong to the tone (the
    /// end may lie there, with too little of it to be tone).
    private mutating func scanSilence(isTone: Bool) -> (Int64?, Int64?) {
        // Before any tone, silence is what is below the level tone must exceed.
        let quiet = max(0.05 * amplitude, Self.floor)
        var firstLoud: Int64?
        var lastLoud: Int64?
        for (i, x) in block.enumerated() {
            let n = blockStart + Int64(i)
            if abs(x) < quiet {
                let since = quietSince ?? n
                quietSince = since
                if n - since + 1 >= minimumSilence {
                    extending = false
                    settling = 2
                }
                continue
            }
            if let since = quietSince, n - since >= minimumSilence {
                if toneStart != nil { pendingSilences.append(n - since) }
                loudSince = n
            }
            quietSince = nil
            if loudSince == nil { loudSince = n }
            if firstLoud == nil { firstLoud = n }
            lastLoud = n
            if !isTone && extending { toneEnd = n }
        }
        return (firstLoud, lastLoud)
    }

    /// Compares a reliable block's phase with the tone's: a step is counted when the next block
    /// confirms the new phase.
    private mutating func follow(_ phase: Double) {
        guard let reference else {
            self.reference = phase
            return
        }
        let threshold = 2 * Double.pi * thresholdSamples / period
        if abs(Self.wrap(phase - reference)) <= threshold {
            self.reference = phase
            candidate = nil
            return
        }
        if let candidate, abs(Self.wrap(phase - candidate.phase)) <= threshold {
            discontinuities += 1
            if firstDiscontinuities.count < listed {
                let shift = Self.wrap(phase - reference) / (2 * Double.pi) * period
                firstDiscontinuities.append(
                    ToneDiscontinuity(sample: candidate.sample, shiftSamples: shift, sampleRate: sampleRate))
            }
            self.reference = phase
            self.candidate = nil
            return
        }
        candidate = (phase, blockStart)
    }

    /// An angle in (-π, π].
    private static func wrap(_ angle: Double) -> Double {
        var a = angle.truncatingRemainder(dividingBy: 2 * Double.pi)
        if a > Double.pi { a -= 2 * Double.pi }
        if a <= -Double.pi { a += 2 * Double.pi }
        return a
    }
}

/// One step in the tone's phase.
public struct ToneDiscontinuity: Sendable, Equatable, CustomStringConvertible {
    /// Where it was seen: the first sample of the first block with the new phase (the step is
    /// within the 5 ms before it, or in that block).
    public var sample: Int64
    /// The step as a time shift in samples, modulo the tone's period, in (-period/2, period/2]:
    /// positive when the tone jumped ahead (samples skipped), negative when it fell behind
    /// (samples repeated or inserted).
    public var shiftSamples: Double
    /// The sample rate, for ``milliseconds``.
    public var sampleRate: Int

    /// A discontinuity at `sample` of `shiftSamples`.
    public init(sample: Int64, shiftSamples: Double, sampleRate: Int) {
        self.sample = sample
        self.shiftSamples = shiftSamples
        self.sampleRate = sampleRate
    }

    /// When it was seen, in ms of rendered audio.
    public var milliseconds: Double { Double(sample) * 1000 / Double(sampleRate) }

    /// `at 1520.0 ms: +3.8 samples`.
    public var description: String {
        let shift = (shiftSamples * 10).rounded() / 10
        return "at \((milliseconds * 10).rounded() / 10) ms: \(shift >= 0 ? "+" : "")\(shift) samples"
    }
}

/// What a ``ToneTracker`` saw.
public struct ToneReport: Sendable, Equatable, CustomStringConvertible {
    /// Samples per second.
    public var sampleRate: Int
    /// The tracked tone (Hz).
    public var frequency: Double
    /// Every sample fed (rendered), silence included.
    public var renderedSamples: Int64
    /// The tone's amplitude as read from the signal (the largest 5 ms fit), full scale 1.
    public var amplitude: Double
    /// The first sample of tone, if any.
    public var toneStartSample: Int64?
    /// Samples from the first sample of tone to the last, inclusive (silences inside included).
    public var toneSamples: Int64
    /// The first sample of the sound the tone started in, with no silence between: before
    /// ``toneStartSample`` when the tone's first milliseconds were not tone-like (a decoder's
    /// fresh start, which a 5 ms fit does not take for the tone when it lasts over a block).
    public var soundStartSample: Int64?
    /// Samples from ``soundStartSample`` to the tone's last, inclusive: the audio heard.
    public var heardSamples: Int64
    /// Runs of silence (at least 1 ms) inside the tone span.
    public var silenceGaps: Int
    /// Their total length in samples.
    public var silenceSamples: Int64
    /// The longest of them in samples.
    public var longestSilenceSamples: Int64
    /// Phase steps of the tone.
    public var discontinuities: Int
    /// The first few of them, in order.
    public var firstDiscontinuities: [ToneDiscontinuity]

    /// ``renderedSamples`` in ms.
    public var renderedMs: Double { ms(renderedSamples) }
    /// ``toneSamples`` in ms.
    public var toneMs: Double { ms(toneSamples) }
    /// ``heardSamples`` in ms.
    public var heardMs: Double { ms(heardSamples) }
    /// Where the tone started, in ms of rendered audio.
    public var toneStartMs: Double? { toneStartSample.map(ms) }
    /// ``silenceSamples`` in ms.
    public var silenceMs: Double { ms(silenceSamples) }
    /// ``longestSilenceSamples`` in ms.
    public var longestSilenceMs: Double { ms(longestSilenceSamples) }

    private func ms(_ samples: Int64) -> Double { Double(samples) * 1000 / Double(sampleRate) }

    /// One line: tone, silences, discontinuities (with the first few).
    public var description: String {
        let round = { (x: Double) in (x * 10).rounded() / 10 }
        var text =
            "rendered \(round(renderedMs)) ms; tone \(round(toneMs)) ms (amplitude \((amplitude * 1000).rounded() / 1000)); "
            + "\(silenceGaps) silence gaps (\(round(silenceMs)) ms, longest \(round(longestSilenceMs)) ms); "
            + "\(discontinuities) discontinuities"
        if !firstDiscontinuities.isEmpty {
            text += " (" + firstDiscontinuities.map(\.description).joined(separator: ", ") + ")"
        }
        return text
    }
}

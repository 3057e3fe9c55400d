// SPDX-License-Identifier: MIT
import Foundation
import MoqTestKit
import Testing

/// The sine analysis behind `moqtestaudiosink`, on synthetic signals (no GStreamer).
@Suite("ToneTracker: a sine's silences and phase steps")
struct ToneTrackerTests {
    static let rate = 48_000
    static let frame = 960  // one 20 ms Opus frame at 48 kHz
    static let f = ToneTracker.defaultFrequency

    /// `count` samples of the tone from sample `start` of its own timeline.
    static func tone(_ start: Int, _ count: Int, amplitude: Double = 0.8, frequency: Double = f) -> [Double] {
        (start..<start + count).map { amplitude * sin(2 * Double.pi * frequency * Double($0) / Double(rate)) }
    }

    static func report(_ samples: [Double]) -> ToneReport {
        var tracker = ToneTracker(sampleRate: rate)
        tracker.feed(samples)
        return tracker.report
    }

    @Test("the chosen frequency moves the phase by at least 3.8 samples for every 1 to 20 whole 20 ms frames")
    func frequencyChoice() {
        let period = Double(Self.rate) / Self.f
        for k in 1...20 {
            let cycles = Double(k * Self.frame) / period
            let off = abs(cycles - cycles.rounded()) * period
            #expect(off > 3.8, "\(k) frames: \(off) samples")
        }
        #expect(abs(Self.f - 430.9017) < 0.0001)
    }

    @Test(
        "a continuous tone between silences: no discontinuity, no gap, its length and amplitude read back",
        arguments: [1_000, 10_167, 10_265])
    func continuousTone(lead: Int) {
        let samples =
            [Double](repeating: 0, count: lead) + Self.tone(0, 3 * Self.rate) + [Double](repeating: 0, count: 500)
        let r = Self.report(samples)
        #expect(r.discontinuities == 0 && r.silenceGaps == 0, "\(r)")
        #expect(r.renderedSamples == Int64(samples.count))
        #expect(abs(r.toneMs - 3_000) < 0.1, "\(r)")
        #expect(r.toneStartSample.map { abs(Int($0) - lead) <= 1 } == true, "\(r)")
        #expect(abs(r.amplitude - 0.8) < 0.01, "\(r)")
    }

    /// (Up to two samples at either end may be too close to a zero crossing to tell from silence.)
    @Test("the tone's start and length are exact to two samples wherever blocks fall")
    func spanAtAnyAlignment() {
        for lead in stride(from: 2_400, to: 2_640, by: 7) {
            let length = 14_400 + (lead * 13) % 240
            // The sine starts at a random phase, so that its first sample is not 0.
            let samples =
                [Double](repeating: 0, count: lead) + Self.tone(lead, length) + [Double](repeating: 0, count: 1_000)
            let r = Self.report(samples)
            let start = Int(r.toneStartSample ?? -100)
            #expect(abs(start - lead) <= 2 && abs(Int(r.toneSamples) - length) <= 2, "lead \(lead): \(r)")
            #expect(r.discontinuities == 0 && r.silenceGaps == 0, "lead \(lead): \(r)")
        }
    }

    @Test("a sound leading into the tone for over a block (a decoder's fresh start) is heard from its start")
    func soundLeadingIntoTone() {
        for lead in [2_400, 2_431, 2_517] {
            // 7 ms where another sound carries most of the energy, then the tone, without silence between.
            let onset = (0..<336).map { 0.3 * sin(2 * Double.pi * 2_000 * Double($0) / Double(Self.rate)) + 0.001 }
            let samples =
                [Double](repeating: 0, count: lead) + onset + Self.tone(lead + 336, 14_400)
                + [Double](repeating: 0, count: 1_000)
            let r = Self.report(samples)
            #expect(r.soundStartSample.map { abs(Int($0) - lead) <= 2 } == true, "lead \(lead): \(r)")
            #expect(abs(Int(r.heardSamples) - (336 + 14_400)) <= 2, "lead \(lead): \(r)")
            // The tone itself is found from the first block a fit takes for it: up to a block (5 ms)
            // late, which is what a few joins' counts of the tone alone came up short by.
            #expect(r.toneSamples <= r.heardSamples && r.toneSamples >= 14_400 - 240, "lead \(lead): \(r)")
            #expect(r.discontinuities == 0 && r.silenceGaps == 0, "lead \(lead): \(r)")
        }
        // A tone alone: heard from its first sample, as long as the tone.
        let r = Self.report([Double](repeating: 0, count: 1_000) + Self.tone(0, 9_600))
        #expect(r.soundStartSample == r.toneStartSample && r.heardSamples == r.toneSamples, "\(r)")
    }

    @Test("dropping 1 to 20 whole frames is one discontinuity each time, of the frames' size modulo the period")
    func droppedFrames() {
        let period = Double(Self.rate) / Self.f
        for k in 1...20 {
            // The splice at a frame boundary and off one, so blocks straddle it too.
            for at in [48_000, 48_000 + 137] {
                let samples = Self.tone(0, at) + Self.tone(at + k * Self.frame, Self.rate)
                let r = Self.report(samples)
                #expect(r.discontinuities == 1, "drop \(k) at \(at): \(r)")
                let cycles = Double(k * Self.frame) / period
                let expected = (cycles - cycles.rounded()) * period
                if let d = r.firstDiscontinuities.first {
                    #expect(abs(d.shiftSamples - expected) < 0.5, "drop \(k): \(d) vs \(expected)")
                    #expect(abs(d.milliseconds - Double(at) / 48) <= 10, "drop \(k): \(d)")
                }
                #expect(r.silenceGaps == 0, "drop \(k): \(r)")
            }
        }
    }

    @Test("repeating 1 to 20 whole frames is one discontinuity each time, the other way")
    func repeatedFrames() {
        let period = Double(Self.rate) / Self.f
        for k in 1...20 {
            let at = 48_000 + 59
            let samples = Self.tone(0, at) + Self.tone(at - k * Self.frame, Self.rate)
            let r = Self.report(samples)
            #expect(r.discontinuities == 1, "repeat \(k): \(r)")
            let cycles = -Double(k * Self.frame) / period
            let expected = (cycles - cycles.rounded()) * period
            if let d = r.firstDiscontinuities.first {
                #expect(abs(d.shiftSamples - expected) < 0.5, "repeat \(k): \(d) vs \(expected)")
            }
        }
    }

    @Test("a 20 ms silence: one gap of 20 ms; inserted it also shifts the phase, in place of tone it does not")
    func silenceGap() {
        let silence = [Double](repeating: 0, count: Self.frame)
        let inserted = Self.report(Self.tone(0, 30_000) + silence + Self.tone(30_000, 30_000))
        #expect(inserted.silenceGaps == 1 && abs(inserted.silenceMs - 20) < 0.1, "\(inserted)")
        #expect(abs(inserted.longestSilenceMs - 20) < 0.1)
        #expect(inserted.discontinuities == 1, "\(inserted)")
        #expect(abs(inserted.toneMs - (60_000 + 960) / 48) < 0.1, "\(inserted)")

        let replaced = Self.report(Self.tone(0, 30_000) + silence + Self.tone(30_960, 30_000))
        #expect(replaced.silenceGaps == 1 && abs(replaced.silenceMs - 20) < 0.1, "\(replaced)")
        #expect(replaced.discontinuities == 0, "\(replaced)")
    }

    @Test("leading and trailing silence is not a gap; several gaps add up")
    func gapsInsideTheSpanOnly() {
        let gap = { (ms: Int) in [Double](repeating: 0, count: ms * 48) }
        let r = Self.report(
            gap(100) + Self.tone(0, 24_000) + gap(5) + Self.tone(24_240, 24_000) + gap(40) + Self.tone(50_160, 9_600)
                + gap(100))
        #expect(r.silenceGaps == 2, "\(r)")
        #expect(abs(r.silenceMs - 45) < 0.1 && abs(r.longestSilenceMs - 40) < 0.1, "\(r)")
        #expect(r.discontinuities == 0, "\(r)")
        #expect(r.toneStartSample.map { abs($0 - 4_800) <= 1 } == true, "\(r)")
    }

    @Test("noise, amplitude wobble and sub-sample phase jitter are not discontinuities")
    func noiseAndJitter() {
        var generator = SplitMix(state: 7)
        let period = Double(Self.rate) / Self.f
        var samples: [Double] = []
        var jitter = 0.0
        for n in 0..<(5 * Self.rate) {
            if n % 240 == 0 { jitter = Double.random(in: -0.4...0.4, using: &generator) }
            let amplitude = 0.8 * (1 + 0.05 * sin(2 * Double.pi * Double(n) / 9_000))
            let phase = 2 * Double.pi * (Double(n) + jitter) / period
            samples.append(amplitude * sin(phase) + Double.random(in: -0.02...0.02, using: &generator))
        }
        let r = Self.report(samples)
        #expect(r.discontinuities == 0 && r.silenceGaps == 0, "\(r)")
        #expect(abs(r.toneMs - 5_000) < 0.1, "\(r)")
    }

    @Test("16-bit quantisation and another sample rate track the same way")
    func otherRate() {
        let rate = 44_100
        let q = (0..<(2 * rate)).map { n -> Double in
            let n = n < rate ? n : n + 882 * 3  // three 20 ms frames dropped
            return (0.5 * 32767 * sin(2 * Double.pi * Self.f * Double(n) / Double(rate))).rounded() / 32768
        }
        var tracker = ToneTracker(sampleRate: rate)
        tracker.feed(q)
        let r = tracker.report
        #expect(r.discontinuities == 1 && r.silenceGaps == 0, "\(r)")
        #expect(abs(r.amplitude - 0.5) < 0.01)
    }

    @Test("another frequency is not tone")
    func wrongFrequency() {
        let r = Self.report(Self.tone(0, Self.rate, frequency: 1_000))
        #expect(r.toneSamples < 480, "\(r)")
    }
}

/// A seeded generator, so that the noise test is the same every run.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

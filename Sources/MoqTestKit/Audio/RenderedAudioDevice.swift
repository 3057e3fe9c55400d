// SPDX-License-Identifier: MIT
import MoqSync

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The sound card behind one `moqtestaudiosink`: it plays what the ring buffer's thread writes
/// at the sample rate, from the first write, holding at most ``bufferMs`` (a `write` returns
/// once no more is queued), and hands each sample to a ``ToneTracker`` when it is played, so
/// that what was queued and then dropped by a reset is not counted as rendered.
///
/// `write` runs on GstAudioSink's ring-buffer thread; `delay` on whichever thread asks for the
/// clock's time; `reset` on a state change or a flush; the report on the application's thread.
/// All of them meet under one lock; `write` sleeps outside it.
final class RenderedAudioDevice: Sendable {
    /// What the device holds at most when `write` returns (like ALSA's buffer).
    static let bufferMs = 20

    /// The sample formats the device takes.
    enum SampleFormat: String, Sendable {
        case f32 = "F32LE"
        case s16 = "S16LE"
    }

    /// The negotiated format.
    struct Format: Sendable {
        var sample: SampleFormat
        var rate: Int
        var channels: Int
        var bytesPerFrame: Int
    }

    private struct State {
        var frequency = ToneTracker.defaultFrequency
        var format: Format?
        var tracker: ToneTracker?
        /// Channel 0 of what was written and not yet played, from `head`.
        var queue: [Float] = []
        var head = 0
        /// Playing since `startNs`, `played` frames so far; stopped when it ran dry or was reset.
        var running = false
        var startNs: UInt64 = 0
        var played: Int64 = 0
        /// Bumped by `reset`, so that a `write` waiting for room returns at once.
        var generation = 0
        var underruns = 0
        var underrunFrames: Int64 = 0
        var resyncs = 0
        var warnings = 0
        var firstWarnings: [String] = []

        var queued: Int { queue.count - head }

        /// Plays what is due by `now`.
        mutating func advance(to now: UInt64) {
            guard running, let format, now > startNs else { return }
            let due = Int64(Double(now - startNs) * Double(format.rate) / 1e9)
            let wanted = due - played
            guard wanted > 0 else { return }
            let take = Int(min(wanted, Int64(queued)))
            tracker?.feed(queue[head..<head + take])
            head += take
            played += Int64(take)
            if wanted > Int64(take) {
                // Ran dry: a device would have underrun (and then restarts with the next write).
                underruns += 1
                underrunFrames += wanted - Int64(take)
                running = false
            }
            if head > 65_536 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }

        mutating func drop() {
            queue.removeAll(keepingCapacity: true)
            head = 0
            running = false
            generation += 1
        }
    }

    private let state = Lock(State())

    /// The tone to track (Hz); takes effect at the next `prepare`.
    var frequency: Double {
        get { state.withLock { $0.frequency } }
        set { state.withLock { $0.frequency = newValue } }
    }

    /// Opens the device (NULL → READY): the counts start again.
    func open() {
        state.withLock { s in
            s.resyncs = 0
            s.warnings = 0
            s.firstWarnings = []
            s.underruns = 0
            s.underrunFrames = 0
        }
    }

    /// Takes the ring buffer's format; false for one the device cannot play.
    func prepare(_ format: Format) -> Bool {
        guard format.rate >= 8_000, format.rate <= 192_000, (1...8).contains(format.channels) else { return false }
        state.withLock { s in
            s.drop()
            s.format = format
            let frequency = min(s.frequency, Double(format.rate) / 2 - 1)
            s.tracker = ToneTracker(frequency: frequency, sampleRate: format.rate)
        }
        return true
    }

    /// Releases the format (the last report stays readable).
    func unprepare() {
        state.withLock { s in
            s.advance(to: Self.now)
            s.drop()
        }
    }

    /// Queues `length` bytes, then waits until no more than ``bufferMs`` is queued (or a reset).
    func write(_ data: UnsafeRawPointer, length: Int) -> Int {
        let (generation, format) = state.withLock { s -> (Int, Format?) in
            let now = Self.now
            s.advance(to: now)
            guard let format = s.format else { return (s.generation, nil) }
            let frames = length / format.bytesPerFrame
            s.queue.reserveCapacity(s.queue.count + frames)
            for i in 0..<frames {
                let offset = i * format.bytesPerFrame
                switch format.sample {
                case .f32: s.queue.append(data.loadUnaligned(fromByteOffset: offset, as: Float.self))
                case .s16: s.queue.append(Float(data.loadUnaligned(fromByteOffset: offset, as: Int16.self)) / 32768)
                }
            }
            if !s.running {
                s.running = true
                s.startNs = now
                s.played = 0
            }
            return (s.generation, format)
        }
        guard let format else { return length }
        let room = format.rate * Self.bufferMs / 1000
        while true {
            let excess = state.withLock { s -> Int in
                s.advance(to: Self.now)
                return s.generation == generation ? s.queued - room : 0
            }
            if excess <= 0 { return length }
            // At most 5 ms at a time, so that a reset is noticed soon.
            let micros = min(5_000, max(100, excess * 1_000_000 / format.rate))
            usleep(UInt32(micros))
        }
    }

    /// Frames queued in the device.
    func delay() -> Int {
        state.withLock { s in
            s.advance(to: Self.now)
            return s.queued
        }
    }

    /// Drops what is queued (pause, flush, stop) and releases a waiting `write`.
    func reset() {
        state.withLock { s in
            s.advance(to: Self.now)
            s.drop()
        }
    }

    /// Counts a WARNING GstAudioBaseSink logged about this sink.
    func noteWarning(_ text: String) {
        state.withLock { s in
            s.warnings += 1
            if s.firstWarnings.count < 4 { s.firstWarnings.append(text) }
            if text.contains("resyncing") { s.resyncs += 1 }
        }
    }

    /// What was rendered until now.
    var report: RenderedAudioReport {
        state.withLock { s in
            s.advance(to: Self.now)
            let format = s.format
            let tone =
                s.tracker?.report
                ?? ToneTracker(frequency: s.frequency, sampleRate: format?.rate ?? 48_000).report
            return RenderedAudioReport(
                tone: tone, resyncs: s.resyncs, warnings: s.warnings, firstWarnings: s.firstWarnings,
                underruns: s.underruns,
                underrunMs: Double(s.underrunFrames) * 1000 / Double(format?.rate ?? 48_000),
                rate: format?.rate ?? 0, channels: format?.channels ?? 0, format: format?.sample.rawValue ?? "")
        }
    }

    /// The monotonic clock in ns.
    static var now: UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }
}

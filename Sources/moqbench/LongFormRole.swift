// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline
import MoqTestKit

/// `moqbench long-form`: what a listener gets from moqsrc's long-form buffering, next to live
/// playback of the same broadcast: time to the first sample, how fast the buffer fills, and the
/// longest blackhole it outlasts without a gap in the sample counter.
///
/// Everything runs in this process: a relay, a UDP proxy on the player's path (the blackhole), a
/// live sine published with moqsink, and a player (`moqsrc ! appsink sync=true`). Opus frames are
/// 20 ms, so a frame's publisher timestamp is its sample counter: any step other than 20 ms is a
/// gap (or a repeat) that a listener would hear.
enum LongFormRole {
    static let usage = """
        usage: moqbench long-form [options]

        Events: startup {mode, startup_ms, fill_rate, filled_ms, buffered_ms}, outage {mode, seconds,
        gap_free, gaps, underruns}, result {mode, longest_gap_free_s}. The fill rate is media received
        per second of wall time until 90 % of the buffer-duration arrived (live: of the first seconds).

          --buffer-s S          long-form buffer-duration (default 15)
          --outages LIST        blackholes for long-form, seconds, in order (default 3,6,9,12)
          --live-outages LIST   blackholes for live playback (default 0.2,0.5,1)
          --settle-s S          playing time after each outage before it is judged (default 2)
        """

    private static let known: Set<String> = ["buffer-s", "outages", "live-outages", "settle-s"]
    static let frameMicros: Int64 = 20_000

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let bufferS = try options.double("buffer-s", default: 15)
        let settle = try options.double("settle-s", default: 2)
        func list(_ name: String, _ fallback: [Double]) throws(BenchError) -> [Double] {
            guard let text = options.value(name) else { return fallback }
            let values = text.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard !values.isEmpty, values.allSatisfy({ $0 > 0 }) else { throw .usage("--\(name): seconds, e.g. 3,6,9") }
            return values
        }
        let outages = try list("outages", [3, 6, 9, 12])
        let liveOutages = try list("live-outages", [0.2, 0.5, 1])
        SwiftMoQElements.register()
        do {
            let relay = try TestRelay.start()
            let playLeg = try UDPProxy.start(forwardingTo: relay.port, seed: 1)
            let broadcast = "bench/long-form-\(UInt32.random(in: 0...UInt32.max))"
            let cacheMs = Int((bufferS + 10) * 1000)
            let publisher = Pipeline(
                launch: "audiotestsrc is-live=true wave=sine ! audio/x-raw,rate=48000,channels=1 ! opusenc ! "
                    + "moqsink cache-duration=\(cacheMs) \(relay.moqsinkProperties(broadcast: broadcast))")
            try publisher.start()
            // The caches hold what the player can buffer at once when it joins.
            try await Task.sleep(for: .seconds(bufferS + 1))
            let modes: [(String, String, [Double])] = [
                ("long-form", "buffering=long-form buffer-duration=\(Int(bufferS * 1000))", outages),
                ("live", "buffering=live", liveOutages),
                // The budget live playback had by default before issue #16 (moq-kit's target buffering).
                ("live-fixed-100", "buffering=live latency-mode=fixed latency=100", liveOutages),
            ]
            for (mode, properties, ladder) in modes {
                try await measure(
                    mode: mode, properties: properties, ladder: ladder, settle: settle, bufferS: bufferS,
                    source: "\(relay.connectionProperties(via: playLeg)) broadcast=\(broadcast)", playLeg: playLeg)
            }
            publisher.stop()
            playLeg.stop()
            await relay.stop()
        } catch let error as BenchError {
            throw error
        } catch {
            throw .runtime("long-form: \(error)")
        }
    }

    private static func measure(
        mode: String, properties: String, ladder: [Double], settle: Double, bufferS: Double, source: String,
        playLeg: UDPProxy
    ) async throws {
        let player = Pipeline(
            launch: "moqsrc name=src \(source) \(properties) src.audio_0 ! appsink name=audio sync=true")
        let started = ContinuousClock.now
        try player.start()
        defer { player.stop() }
        let sink = try AppSink(player, name: "audio")
        let heard = Heard()
        let reader = Task {
            while !Task.isCancelled {
                guard let sample = sink.tryPull() else {
                    try? await Task.sleep(for: .milliseconds(2))
                    continue
                }
                if let t = sample.publisherTime {
                    heard.append(t.components.seconds * 1_000_000 + t.components.attoseconds / 1_000_000_000_000)
                }
            }
        }
        defer { reader.cancel() }
        // Media received so far (µs of it: what is buffered plus what was heard), every 10 ms, until
        // the buffer stops growing faster than real time.
        var samples: [(at: Duration, receivedMs: Double)] = []
        var startup: Duration?
        let watchUntil = ContinuousClock.now + .seconds(max(3, bufferS / 3))
        while ContinuousClock.now < watchUntil {
            let now = ContinuousClock.now - started
            if startup == nil, heard.count > 0 { startup = now }
            samples.append((now, stat(player, "audio-buffer-ms") + Double(heard.count) * 20))
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let startup else { throw BenchError.runtime("\(mode): no audio within \(watchUntil - started)") }
        // The fill rate: media received until it reached 90 % of the deep buffer (live: of what the
        // first seconds brought), per second of wall time.
        let goal = 0.9 * (mode == "long-form" ? bufferS * 1000 : samples.last?.receivedMs ?? 0)
        let filled = samples.first { $0.receivedMs >= goal } ?? samples.last ?? (Duration.zero, 0)
        let fillRate = filled.receivedMs / max(1, ms(filled.at))
        Events.emit(
            "startup",
            [
                "mode": .string(mode), "startup_ms": .double(ms(startup)), "fill_rate": .double(fillRate),
                "filled_ms": .double(ms(filled.at)), "buffered_ms": .double(stat(player, "audio-buffer-ms")),
            ])
        var longest = 0.0
        for seconds in ladder {
            // Refill first: a deep buffer again (long-form), or the live edge again.
            let refillUntil = ContinuousClock.now + .seconds(20)
            while mode == "long-form", stat(player, "audio-buffer-ms") < bufferS * 900,
                ContinuousClock.now < refillUntil
            {
                try await Task.sleep(for: .milliseconds(100))
            }
            let underrunsBefore = stat(player, "audio-underruns")
            let from = heard.count
            playLeg.blackhole()
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            playLeg.restore()
            try await Task.sleep(for: .milliseconds(Int(settle * 1000)))
            let times = heard.since(from)
            let steps = zip(times, times.dropFirst()).filter { $1 - $0 != frameMicros }
            let gaps = steps.count
            let gapFree = gaps == 0 && times.count > 10
            Events.emit(
                "outage",
                [
                    "mode": .string(mode), "seconds": .double(seconds), "gap_free": .bool(gapFree), "gaps": .int(gaps),
                    "underruns": .double(stat(player, "audio-underruns") - underrunsBefore),
                ])
            guard gapFree else { break }
            longest = seconds
        }
        Events.emit("result", ["mode": .string(mode), "longest_gap_free_s": .double(longest)])
    }

    private static func stat(_ player: Pipeline, _ field: String) -> Double {
        let stats = try? player.element(named: "src").property("stats")?.structureValue
        return stats?[field]?.doubleValue ?? stats?[field]?.intValue.map(Double.init) ?? 0
    }

    private static func ms(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}

/// Publisher timestamps (µs) of what the appsink rendered, in order.
private final class Heard: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [Int64] = []
    func append(_ t: Int64) { lock.withLock { times.append(t) } }
    var count: Int { lock.withLock { times.count } }
    func since(_ index: Int) -> [Int64] { lock.withLock { Array(times[min(index, times.count)...]) } }
}

// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqPipeline
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// Long-form listening (moqsrc `buffering=long-form`): a deep buffer behind the live edge,
/// filled from the caches faster than real time, that carries playback through trouble on the
/// way without an audible gap. A sine (Opus, 20 ms frames: each frame's publisher timestamp is
/// its sample counter) is played by a sink that renders on the clock, so a frame that came too
/// late would be a gap.
///
/// Run alone (`SOLO_TESTS` in the Makefile): they judge playback against the clock.
@Suite("Long-form listening: a deep buffer that outlasts trouble", .serialized, .timeLimit(.minutes(3)))
struct LongFormTests {
    init() { SwiftMoQElements.register() }

    static let frameMicros = 20_000

    /// Reads a numeric field of moqsrc's `stats`.
    static func stat(_ player: Pipeline, _ field: String) throws -> Double {
        let stats = try player.element(named: "src").property("stats")?.structureValue
        return stats?[field]?.doubleValue ?? stats?[field]?.intValue.map(Double.init) ?? .nan
    }

    /// What a run measured.
    struct Outcome {
        var bufferedMs: Double
        var peakFill: Double
        var underruns: Double
        var retargets: Double
        var audio: [Int]
        var errors: Bool
    }

    /// Publishes a sine for a while (what the publisher's cache holds when the player joins is
    /// what it can buffer at once), plays it long-form through `path`'s play leg, runs `fault`
    /// once the buffer is deep, then watches the fill rate for a while.
    func run(_ path: FaultPath, fault: @escaping @Sendable () async throws -> Void) async throws -> Outcome {
        let broadcast = uniqueBroadcast("long-form")
        let publisher = Pipeline(
            launch: "audiotestsrc is-live=true wave=sine ! audio/x-raw,rate=48000,channels=1 ! opusenc ! moq.sink_0 "
                + "moqsink name=moq cache-duration=20000 "
                + path.relay.moqsinkProperties(broadcast: broadcast, via: path.publishLeg))
        try publisher.start()
        defer { publisher.stop() }
        try await Task.sleep(for: .seconds(7))
        let player = Pipeline(
            launch: "moqsrc name=src \(path.relay.connectionProperties(via: path.playLeg)) broadcast=\(broadcast) "
                + "buffering=long-form buffer-duration=10000 src.audio_0 ! appsink name=audio sync=true")
        try player.start()
        defer { player.stop() }
        let audioSink = try AppSink(player, name: "audio")
        let received = Lock<[Int]>([])
        let reader = Task {
            while !Task.isCancelled {
                guard let sample = audioSink.tryPull() else {
                    try? await Task.sleep(for: .milliseconds(2))
                    continue
                }
                if let t = sample.publisherTime { received.withLock { $0.append(Int(micros(t))) } }
            }
        }
        defer { reader.cancel() }
        // The cached seconds arrive far faster than they play: the buffer is deep at once.
        try await eventually("a deep buffer", timeout: .seconds(10)) {
            ((try? Self.stat(player, "audio-buffer-ms")) ?? 0) >= 4_000
        }
        let buffered = try Self.stat(player, "audio-buffer-ms")
        try await Task.sleep(for: .seconds(1))
        try await fault()
        // After the trouble the queued media arrives in a burst: more than a second per second.
        var peakFill = 0.0
        let deadline = ContinuousClock.now + .seconds(6)
        while ContinuousClock.now < deadline {
            peakFill = max(peakFill, (try? Self.stat(player, "audio-fill-rate")) ?? 0)
            try await Task.sleep(for: .milliseconds(100))
        }
        let stats = try player.element(named: "src").property("stats")?.structureValue
        #expect(stats?["buffering"]?.stringValue == "long-form")
        return Outcome(
            bufferedMs: buffered, peakFill: peakFill, underruns: try Self.stat(player, "audio-underruns"),
            retargets: try Self.stat(player, "retargets"), audio: received.withLock { $0 },
            errors: (publisher.collectedMessages + player.collectedMessages).contains { $0.isError })
    }

    /// No underrun, no gap and no repeat in the sample counter, and a refill faster than real time.
    static func check(_ o: Outcome, _ label: String, refill: Bool = true) {
        print(
            "long-form \(label): buffered \(o.bufferedMs) ms; peak fill rate \(o.peakFill)×; underruns \(o.underruns)")
        #expect(o.underruns == 0 && o.retargets == 0, "\(label): underruns \(o.underruns), retargets \(o.retargets)")
        if refill {
            #expect(o.peakFill > 1.5, "\(label): the buffer did not refill faster than real time (peak \(o.peakFill)×)")
        }
        // (The first frame is shorter: the encoder's pre-skip.)
        let gaps = zip(o.audio, o.audio.dropFirst()).filter { $1 - $0 > frameMicros || $1 <= $0 }.prefix(5)
        #expect(o.audio.count > 300 && gaps.isEmpty, "\(label): \(o.audio.count) frames; gaps \(Array(gaps))")
        #expect(!o.errors, "\(label): an ERROR was posted")
    }

    @Test(
        "the buffer fills at once from the caches, a 3 s blackhole on the player's path is not heard, and the buffer refills faster than real time"
    )
    func outageIsNotHeard() async throws {
        try await FaultPath.with { (path) async throws in
            let outcome = try await run(path) {
                path.playLeg.blackhole()
                try await Task.sleep(for: .seconds(3))
                path.playLeg.restore()
            }
            Self.check(outcome, "outage")
        }
    }

    @Test("a relay restart is not heard: both sides reconnect, the old buffer plays while the new one fills")
    func relayRestartIsNotHeard() async throws {
        try await FaultPath.with { (path) async throws in
            let relay = path.relay
            let outcome = try await run(path) {
                await relay.stop()
                try await Task.sleep(for: .seconds(1))
                try await relay.restart()
            }
            // The old subscription's buffer plays for several seconds after the restart, so the new
            // one's burst comes after the watched window: only continuity is judged here.
            Self.check(outcome, "relay restart", refill: false)
        }
    }
}

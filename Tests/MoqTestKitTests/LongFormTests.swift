// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqPipeline
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// Long-form listening (moqsrc `buffering=long-form`): a deep buffer behind the live edge,
/// filled from the caches faster than real time, that carries playback through an outage on the
/// player's path without an audible gap. A sine (Opus, 20 ms frames: each frame's publisher
/// timestamp is its sample counter) is played by a sink that renders on the clock, so a frame
/// that came too late would be a gap.
///
/// Run alone (`SOLO_TESTS` in the Makefile): they judge playback against the clock.
@Suite("Long-form listening: a deep buffer that outlasts an outage", .serialized, .timeLimit(.minutes(2)))
struct LongFormTests {
    init() { SwiftMoQElements.register() }

    static let frameMicros = 20_000

    /// Reads a numeric field of moqsrc's `stats`.
    static func stat(_ player: Pipeline, _ field: String) throws -> Double {
        let stats = try player.element(named: "src").property("stats")?.structureValue
        return stats?[field]?.doubleValue ?? stats?[field]?.intValue.map(Double.init) ?? .nan
    }

    @Test(
        "the buffer fills at once from the caches, a 3 s blackhole on the player's path is not heard, and the buffer refills faster than real time"
    )
    func outageIsNotHeard() async throws {
        let path = try FaultPath.start()
        defer { Task { await path.stop() } }
        let broadcast = uniqueBroadcast("long-form")
        let publisher = Pipeline(
            launch: "audiotestsrc is-live=true wave=sine ! audio/x-raw,rate=48000,channels=1 ! opusenc ! moq.sink_0 "
                + "moqsink name=moq cache-duration=20000 " + path.relay.moqsinkProperties(broadcast: broadcast))
        try publisher.start()
        defer { publisher.stop() }
        // What the publisher's cache holds when the player joins is what it can buffer at once.
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
        path.playLeg.blackhole()
        try await Task.sleep(for: .seconds(3))
        path.playLeg.restore()
        // After the outage the queued media arrives in a burst: more than a second per second.
        var peakFill = 0.0
        let deadline = ContinuousClock.now + .seconds(6)
        while ContinuousClock.now < deadline {
            peakFill = max(peakFill, (try? Self.stat(player, "audio-fill-rate")) ?? 0)
            try await Task.sleep(for: .milliseconds(100))
        }
        let underruns = try Self.stat(player, "audio-underruns")
        let retargets = try Self.stat(player, "retargets")
        print(
            "long-form: buffered \(buffered) ms before the outage; peak fill rate \(peakFill)×; underruns \(underruns)")
        #expect(underruns == 0 && retargets == 0, "underruns \(underruns), retargets \(retargets)")
        #expect(peakFill > 1.5, "the buffer did not refill faster than real time (peak \(peakFill)×)")
        let stats = try player.element(named: "src").property("stats")?.structureValue
        #expect(stats?["buffering"]?.stringValue == "long-form")
        // Every frame, in order, once: no gap in the sample counter from the first frame played.
        let audio = received.withLock { $0 }
        // (The first frame is shorter: the encoder's pre-skip.)
        let gaps = zip(audio, audio.dropFirst()).filter { $1 - $0 > Self.frameMicros || $1 <= $0 }.prefix(5)
        #expect(audio.count > 300 && gaps.isEmpty, "\(audio.count) frames; gaps \(Array(gaps))")
        #expect(Set(audio).count == audio.count, "frames repeated")
        #expect(!(publisher.collectedMessages + player.collectedMessages).contains { $0.isError })
    }
}

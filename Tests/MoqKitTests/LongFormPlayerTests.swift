// SPDX-License-Identifier: MIT
import Foundation
import MoqKit
import MoqTestKit
import SwiftMoQ
import Testing

/// MoqKit's Player in long-form mode: pause and resume keep the pipeline, the connection and
/// the buffer, and answer at once.
@Suite("MoqKit Player, long-form: controls that answer at once", .serialized, .timeLimit(.minutes(2)))
struct LongFormPlayerTests {
    @Test("pause stops the audio and resume restarts it without a new connection; the buffer grows while paused")
    func pauseAndResume() async throws {
        let relay = try TestRelay.start()
        defer { Task { await relay.stop() } }
        let session = Session(url: relay.url(), options: relay.sessionOptions)
        try await session.connect()
        let viewer = Session(url: relay.url(), options: relay.sessionOptions)
        try await viewer.connect()
        let publisher = Publisher()
        try publisher.addAudioTrack(source: TestPattern(), config: AudioEncoderConfig(channels: 1))
        try await session.publish(path: "radio", publisher: publisher)
        try await publisher.start()
        defer { publisher.stop() }
        let subscription = try await viewer.subscribe(prefix: "")
        var broadcasts = subscription.broadcasts.makeAsyncIterator()
        let broadcast = try #require(await broadcasts.next())
        var catalogs = broadcast.catalogs().makeAsyncIterator()
        var catalog = try #require(await catalogs.next())
        while catalog.playableAudioTracks.isEmpty { catalog = try #require(await catalogs.next()) }

        // When each PCM buffer reached the app (monotonic ns), and whether it was silent.
        let arrivals = SyncBox<[UInt64]>([])
        let silent = SyncBox<[Bool]>([])
        let player = try Player(
            catalog: catalog,
            output: .callbacks(
                video: nil,
                audio: { samples in
                    let quiet = samples.data.withUnsafeBytes { raw in
                        raw.bindMemory(to: Float.self).allSatisfy { abs($0) < 1e-6 }
                    }
                    arrivals.mutate { $0.append(SystemClock().now()) }
                    silent.mutate { $0.append(quiet) }
                }),
            mode: .longForm(bufferDuration: .seconds(8)))
        try await player.play()
        try await waitUntil("a second of audio") { arrivals.value.count >= 50 }
        let connections = relay.relay?.sessionCount

        func bufferMs() -> Double {
            let stats = try? player.runningPipeline?.element(named: "src").property("stats")?.structureValue
            return stats?["audio-buffer-ms"]?.doubleValue ?? 0
        }
        let bufferBefore = bufferMs()
        let pausedAt = SystemClock().now()
        await player.pause()
        try await Task.sleep(for: .seconds(2))
        let lastBefore = arrivals.value.last ?? pausedAt
        let pauseTook = lastBefore > pausedAt ? (lastBefore - pausedAt) / 1_000_000 : 0
        let countPaused = arrivals.value.count
        try await Task.sleep(for: .milliseconds(500))
        #expect(arrivals.value.count == countPaused, "audio went on while paused")
        #expect(bufferMs() >= bufferBefore + 1_500, "the buffer did not keep what arrived while paused")

        let resumedAt = SystemClock().now()
        try await player.play()
        try await waitUntil("audio after resume", timeout: .seconds(5)) { arrivals.value.count > countPaused }
        let firstAfter = arrivals.value[countPaused]
        let resumeTook = firstAfter > resumedAt ? (firstAfter - resumedAt) / 1_000_000 : 0

        // Volume: silence from the first buffer that reaches the output after the change.
        try await waitUntil("more audio", timeout: .seconds(5)) { arrivals.value.count > countPaused + 10 }
        #expect(!(silent.value.last ?? true), "the tone is not silent before the change")
        let mutedAt = SystemClock().now()
        player.setVolume(0)
        try await waitUntil("a silent buffer", timeout: .seconds(5)) { silent.value.last == true }
        let (times, quiet) = (arrivals.value, silent.value)
        let firstSilent = zip(times, quiet).first { $0.0 > mutedAt && $0.1 }?.0 ?? mutedAt
        let muteTook = (firstSilent > mutedAt ? firstSilent - mutedAt : 0) / 1_000_000
        try await Task.sleep(for: .milliseconds(200))
        #expect(silent.value.suffix(5).allSatisfy { $0 }, "sound after volume 0")
        #expect(player.volume == 0)
        print(
            "long-form controls: pause effective after \(pauseTook) ms, resume after \(resumeTook) ms, volume after \(muteTook) ms"
        )
        // The same pipeline and connection: nothing was torn down or reopened.
        #expect(relay.relay?.sessionCount == connections)
        #expect(player.stats.reconnects == 0)
        await player.stop()
        await viewer.close()
        await session.close()
    }
}

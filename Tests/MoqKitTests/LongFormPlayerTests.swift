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

        // When each PCM buffer reached the app (monotonic ns).
        let arrivals = SyncBox<[UInt64]>([])
        let player = try Player(
            catalog: catalog,
            output: .callbacks(video: nil, audio: { _ in arrivals.mutate { $0.append(SystemClock().now()) } }),
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
        print("long-form controls: pause effective after \(pauseTook) ms, resume after \(resumeTook) ms")
        // The same pipeline and connection: nothing was torn down or reopened.
        #expect(relay.relay?.sessionCount == connections)
        #expect(player.stats.reconnects == 0)
        await player.stop()
        await viewer.close()
        await session.close()
    }
}

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
        try await scoped(try await RadioFixture.start(), teardown: { await $0.close() }) { (radio) async throws in

            // When each PCM buffer reached the app (monotonic ns), and whether it was silent.
            let arrivals = SyncBox<[UInt64]>([])
            let silent = SyncBox<[Bool]>([])
            let player = try Player(
                catalog: radio.catalog,
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
            try await eventually("a second of audio") { arrivals.value.count >= 50 }
            let connections = radio.relay.relay?.sessionCount

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
            try await eventually("audio after resume", timeout: .seconds(5)) { arrivals.value.count > countPaused }
            let firstAfter = arrivals.value[countPaused]
            let resumeTook = firstAfter > resumedAt ? (firstAfter - resumedAt) / 1_000_000 : 0

            // Volume: silence from the first buffer that reaches the output after the change.
            try await eventually("more audio", timeout: .seconds(5)) { arrivals.value.count > countPaused + 10 }
            #expect(!(silent.value.last ?? true), "the tone is not silent before the change")
            let mutedAt = SystemClock().now()
            player.setVolume(0)
            try await eventually("a silent buffer", timeout: .seconds(5)) { silent.value.last == true }
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
            #expect(radio.relay.relay?.sessionCount == connections)
            #expect(player.stats.reconnects == 0)
            await player.stop()
        }
    }

    @Test("seek within the buffer: forward toward the live edge and back, each heard within 100 ms, same connection")
    func seekWithinTheBuffer() async throws {
        try await scoped(try await RadioFixture.start(), teardown: { await $0.close() }) { (radio) async throws in
            let (player, heard) = try radio.longFormPlayer()
            try await player.play()
            try await eventually("a second of audio, with the publisher's time", timeout: .seconds(10)) {
                heard.value.count >= 50
            }
            // Fall 2 s behind the live edge.
            await player.pause()
            try await Task.sleep(for: .seconds(2))
            try await player.play()
            try await eventually("audio after resume", timeout: .seconds(5)) { heard.value.count >= 60 }

            /// Seeks, then waits for the first buffer whose publisher time jumped as `jumped` says;
            /// returns how long after the call it was heard (ms) and its publisher time.
            func measure(
                _ what: String, _ seek: () throws -> Void, jumped: @escaping @Sendable (Int64, Int64) -> Bool
            ) async throws -> (ms: UInt64, publisherMs: Int64) {
                let before = heard.value.count
                let lastMs = heard.value.last?.publisherMs ?? 0
                let at = SystemClock().now()
                try seek()
                try await eventually(what, timeout: .seconds(5)) {
                    heard.value.dropFirst(before).contains { jumped(lastMs, $0.publisherMs) }
                }
                let first = try #require(heard.value.dropFirst(before).first { jumped(lastMs, $0.publisherMs) })
                return ((first.at > at ? first.at - at : 0) / 1_000_000, first.publisherMs)
            }
            let lastBeforeForward = heard.value.last?.publisherMs ?? 0
            let forward = try await measure(
                "the jump toward the live edge", { try player.seek(behindLiveEdge: .milliseconds(200)) },
                jumped: { last, ms in ms > last + 1_000 })
            #expect(forward.publisherMs >= lastBeforeForward + 1_500, "the forward seek skipped too little")
            try await Task.sleep(for: .milliseconds(500))
            let target = (heard.value.last?.publisherMs ?? 0) - 2_000
            let back = try await measure(
                "the jump back", { try player.seek(toPublisherTime: .milliseconds(target)) },
                jumped: { last, ms in ms < last - 1_000 })
            // The audio group holding the target (a few frames) is entered at the target itself.
            #expect(abs(back.publisherMs - target) <= 100, "played from \(back.publisherMs) ms, asked for \(target) ms")
            print("long-form seek: forward effective after \(forward.ms) ms, back after \(back.ms) ms")
            #expect(forward.ms <= 100)
            #expect(back.ms <= 100)
            // After the seek back, what is heard goes on from there, without repeats or holes.
            try await Task.sleep(for: .milliseconds(600))
            let after = heard.value.drop { $0.publisherMs != back.publisherMs }.map(\.publisherMs)
            #expect(after.count >= 20)
            #expect(zip(after, after.dropFirst()).allSatisfy { $1 > $0 && $1 - $0 <= 40 }, "\(after.prefix(40))")
            #expect(player.stats.reconnects == 0)
            #expect(throws: SessionError.self) {
                try Player(catalog: radio.catalog, output: .headless).seek(behindLiveEdge: .zero)
            }
            await player.stop()
        }
    }

    @Test("the publisher moves to the next item: a player 2 s behind jumps to its first group at once")
    func publisherTimelineChange() async throws {
        try await scoped(try await RadioFixture.start(), teardown: { await $0.close() }) { (radio) async throws in
            let (player, heard) = try radio.longFormPlayer()
            let changes = SyncBox<[PlayerEvent]>([])
            let events = player.subscribeEvents()
            let watcher = Task {
                for await event in events where event.name == .timelineChange { changes.mutate { $0.append(event) } }
            }
            defer { watcher.cancel() }
            try await player.play()
            try await eventually("a second of audio", timeout: .seconds(10)) { heard.value.count >= 50 }
            // Fall 2 s behind the publisher: what it plays now is 2 s old.
            await player.pause()
            try await Task.sleep(for: .seconds(2))
            try await player.play()
            try await eventually("audio after resume", timeout: .seconds(5)) { heard.value.count >= 60 }
            let before = heard.value.count
            let lastBefore = heard.value.last?.publisherMs ?? 0
            let changedAt = SystemClock().now()
            #expect(try radio.publisher.startNextItem() == 1)
            try await eventually("the jump to the next item", timeout: .seconds(5)) { !changes.value.isEmpty }
            let change = try #require(changes.value.first)
            let startMs = Int64((change.fields["position-us"]?.intValue ?? 0) / 1000)
            #expect(startMs >= lastBefore + 1_500, "the item starts at \(startMs) ms; \(lastBefore) ms was playing")
            try await eventually("the item heard", timeout: .seconds(5)) {
                heard.value.dropFirst(before).contains { $0.publisherMs >= startMs }
            }
            let after = Array(heard.value.dropFirst(before))
            let first = try #require(after.first { $0.publisherMs >= startMs })
            // At the group boundary: the item's first frame is the first one heard of it.
            #expect(first.publisherMs == startMs)
            // Nothing between what was playing and the item's start is heard after the jump.
            let jumpIndex = try #require(after.firstIndex { $0.publisherMs >= startMs })
            #expect(after[jumpIndex...].allSatisfy { $0.publisherMs >= startMs })
            let tookMs = (first.at > changedAt ? first.at - changedAt : 0) / 1_000_000
            let skipped = change.fields["skipped-ms"]?.doubleValue ?? 0
            print(
                "long-form timeline change: the next item heard \(tookMs) ms after the publisher moved; \(Int(skipped)) ms of the previous item skipped"
            )
            // Counted from the last frame moqsrc pushed, which runs ahead of what is heard by what the
            // pipeline's queue holds (up to 1 s).
            #expect(skipped >= 500)
            #expect(tookMs <= 500, "the catalog and the item's first group travel first; then it is a seek")
            await player.stop()
        }
    }

    @Test("a latency change while playing long-form: lower and higher, each effective within 100 ms")
    func latencyChange() async throws {
        try await scoped(try await RadioFixture.start(), teardown: { await $0.close() }) { (radio) async throws in

            // When each buffer was rendered (monotonic ns) minus its running time: the render delay,
            // plus the pipeline's base time (a constant).
            let heard = SyncBox<[(at: UInt64, delayNs: Int64)]>([])
            let player = try Player(
                catalog: radio.catalog, targetBuffering: .milliseconds(600),
                output: .callbacks(
                    video: nil,
                    audio: { samples in
                        guard let pts = samples.pts else { return }
                        let at = SystemClock().now()
                        let ptsNs = pts.components.seconds * 1_000_000_000 + pts.components.attoseconds / 1_000_000_000
                        heard.mutate { $0.append((at, Int64(at) - ptsNs)) }
                    }),
                mode: .longForm(bufferDuration: .seconds(8)))
            try await player.play()
            try await eventually("a second of audio", timeout: .seconds(10)) { heard.value.count >= 60 }
            func delayNow() -> Int64 {
                let recent = heard.value.suffix(9).map(\.delayNs).sorted()
                return recent[recent.count / 2]
            }

            // Lower: the next buffers are rendered 500 ms sooner.
            let high = delayNow()
            var count = heard.value.count
            let loweredAt = SystemClock().now()
            player.updateTargetLatency(.milliseconds(100))
            try await eventually("the lower delay", timeout: .seconds(5)) {
                heard.value.dropFirst(count).contains { $0.delayNs <= high - 300_000_000 }
            }
            let lowered = try #require(heard.value.dropFirst(count).first { $0.delayNs <= high - 300_000_000 })
            let lowerTook = (lowered.at > loweredAt ? lowered.at - loweredAt : 0) / 1_000_000
            try await Task.sleep(for: .seconds(1))

            // Higher: rendering holds for the added 500 ms, from the change on.
            let low = delayNow()
            #expect(high - low >= 400_000_000, "the delay moved by \((high - low) / 1_000_000) ms")
            count = heard.value.count
            let raisedAt = SystemClock().now()
            player.updateTargetLatency(.milliseconds(600))
            try await eventually("the higher delay", timeout: .seconds(5)) {
                heard.value.dropFirst(count).contains { $0.delayNs >= low + 300_000_000 }
            }
            // The last buffer rendered at the old delay: where the hold began.
            let raisedTook =
                heard.value.dropFirst(count).last { $0.delayNs < low + 300_000_000 }.map {
                    ($0.at > raisedAt ? $0.at - raisedAt : 0) / 1_000_000
                } ?? 0
            print(
                "long-form latency change: 600 → 100 ms effective after \(lowerTook) ms, 100 → 600 ms after \(raisedTook) ms"
            )
            #expect(lowerTook <= 100)
            #expect(raisedTook <= 100)
            #expect(player.stats.reconnects == 0)
            await player.stop()
        }
    }
}

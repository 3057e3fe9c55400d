// SPDX-License-Identifier: MIT
import Foundation
import MoqKit
import MoqTestKit
import SwiftMoQ
import Testing

/// MoqKit's QueuePlayer plays one broadcast after another without a gap.
@Suite("MoqKit QueuePlayer: broadcasts one after another, gaplessly", .serialized, .timeLimit(.minutes(2)))
struct QueuePlayerTests {
    typealias Heard = SyncBox<[(pts: Duration, duration: Duration, publisher: Duration)]>

    @Test("the queued broadcast is prerolled and starts where the first one ends; the queue follows")
    func gapless() async throws {
        try await withTestRelay() { (relay) async throws in
            let room = "queue-\(UInt32.random(in: 0...UInt32.max))"
            let (firstSession, first) = try await RadioFixture.publishTone(relay, path: "\(room)/one")
            let viewer = Session(url: relay.url(), options: relay.sessionOptions)
            try await viewer.connect()
            let catalog = try await RadioFixture.playableAudioCatalog(viewer, prefix: "\(room)/one")

            let heard = Heard([])
            let queue = try QueuePlayer(
                first: catalog, then: [],
                output: .callbacks(
                    video: nil,
                    audio: { samples in
                        let bytesPerSecond = samples.sampleRate * samples.channels * 4  // F32LE
                        guard let pts = samples.pts, let publisher = samples.publisherTime, bytesPerSecond > 0 else {
                            return
                        }
                        let duration = Duration.nanoseconds(
                            Int64(samples.data.count) * 1_000_000_000 / Int64(bytesPerSecond))
                        heard.mutate { $0.append((pts, duration, publisher)) }
                    }))
            let events = queue.subscribeEvents()
            let collected = SyncBox<[PlayerEvent]>([])
            let watcher = Task {
                for await event in events where event.name.rawValue.hasPrefix("queue.") {
                    collected.mutate { $0.append(event) }
                }
            }
            try await queue.play()
            try await eventually("a second of the first broadcast", timeout: .seconds(15)) { heard.value.count >= 50 }

            // Queued while playing; published a little later, so its clock starts lower.
            queue.append("\(room)/two")
            #expect(queue.items == ["\(room)/two"])
            let (secondSession, second) = try await RadioFixture.publishTone(relay, path: "\(room)/two")
            try await eventually("the second broadcast prerolled", timeout: .seconds(10)) {
                collected.value.contains { $0.name == .queuePreroll }
            }
            first.stop()
            try await eventually("the queue moved on", timeout: .seconds(10)) { queue.currentItem == "\(room)/two" }
            let switchedAt = heard.value.count
            try await eventually("half a second of the second broadcast", timeout: .seconds(10)) {
                heard.value.count >= switchedAt + 25
            }
            let samples = heard.value
            let at = try #require(
                samples.indices.dropFirst().first { samples[$0].publisher < samples[$0 - 1].publisher },
                "no switch in the publisher timestamps")
            let gap = samples[at].pts - (samples[at - 1].pts + samples[at - 1].duration)
            // Gapless: at most one 20 ms frame between the last sample of one and the first of the next.
            #expect(gap >= .milliseconds(-1) && gap <= .milliseconds(20), "gap \(gap) at the switch")
            #expect(queue.items.isEmpty)
            // Events reach the watcher task asynchronously.
            try await eventually("the queue.advance event", timeout: .seconds(5)) {
                collected.value.contains { $0.name == .queueAdvance }
            }
            let advance = try #require(collected.value.first { $0.name == .queueAdvance })
            #expect(advance.fields["prerolled"]?.boolValue == true, "\(advance.fields)")
            #expect(queue.player.stats.reconnects == 0)

            watcher.cancel()
            await queue.stop()
            second.stop()
            await viewer.close()
            await firstSession.close()
            await secondSession.close()
        }
    }
}

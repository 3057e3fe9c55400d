// SPDX-License-Identifier: MIT
import Foundation
import MoqKit
import MoqTestKit
import SwiftMoQ
import Testing

/// MoqKit's Player moves its audio to another output while playing.
@Suite("MoqKit Player: switching the audio output while playing", .serialized, .timeLimit(.minutes(2)))
struct OutputSwitchTests {
    typealias Heard = SyncBox<[(at: UInt64, publisherMs: Int64)]>

    func recorder(_ box: Heard) -> @Sendable (AudioSamples) -> Void {
        { samples in
            guard let time = samples.publisherTime else { return }
            let ms = time.components.seconds * 1000 + time.components.attoseconds / 1_000_000_000_000_000
            box.mutate { $0.append((SystemClock().now(), ms)) }
        }
    }

    @Test("app → app → a sink → app: the sample counter runs on with no gap and no repeat, on one connection")
    func switchOutputs() async throws {
        try await scoped(try await RadioFixture.start(), teardown: { await $0.close() }) { (radio) async throws in

            let (first, second, third) = (Heard([]), Heard([]), Heard([]))
            let player = try Player(catalog: radio.catalog, output: .callbacks(video: nil, audio: recorder(first)))
            try await player.play()
            try await eventually("a second of audio", timeout: .seconds(10)) { first.value.count >= 50 }
            let connections = radio.relay.relay?.sessionCount

            let switchedAt = SystemClock().now()
            try player.switchAudioOutput(to: .callback(recorder(second)))
            try await eventually("audio at the second output", timeout: .seconds(5)) { second.value.count >= 25 }
            let countFirst = first.value.count
            try await Task.sleep(for: .milliseconds(200))  // under test: the old output stays silent meanwhile
            #expect(first.value.count == countFirst, "the first output still gets audio")
            let (lastFirst, firstSecond) = (try #require(first.value.last), try #require(second.value.first))
            // One Opus frame (20 ms) after the last one the first output rendered: nothing lost, nothing twice.
            #expect(
                firstSecond.publisherMs - lastFirst.publisherMs == 20,
                "the first output ended at \(lastFirst.publisherMs) ms, the second began at \(firstSecond.publisherMs) ms"
            )
            let silenceMs = Double(firstSecond.at > lastFirst.at ? firstSecond.at - lastFirst.at : 0) / 1e6
            let tookMs = Double(firstSecond.at > switchedAt ? firstSecond.at - switchedAt : 0) / 1e6
            print(
                "audio output switch: \(tookMs) ms to the new output; \(silenceMs) ms between the last buffer of one and the first of the other"
            )
            // A buffer is 20 ms: the new output's first one follows the old output's last on the clock.
            #expect(silenceMs <= 50)

            // To a plain sink and back to the app: the pipeline and the connection stay.
            try player.switchAudioOutput(to: .element("fakesink sync=true"))
            try await Task.sleep(for: .milliseconds(300))  // under test: playing a while into the plain sink
            try player.switchAudioOutput(to: .callback(recorder(third)))
            try await eventually("audio at the third output", timeout: .seconds(5)) { third.value.count >= 10 }
            let times = third.value.map(\.publisherMs)
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 20 }, "\(times.prefix(20))")
            #expect(radio.relay.relay?.sessionCount == connections)
            #expect(player.stats.reconnects == 0)
            #expect(throws: SessionError.self) { try player.switchAudioOutput(to: .element("no-such-element-here")) }
            await player.stop()
        }
    }
}

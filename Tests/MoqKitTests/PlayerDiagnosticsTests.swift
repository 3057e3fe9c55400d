// SPDX-License-Identifier: MIT
import Foundation
import MoqPipeline
import MoqTestKit
import Testing

@testable import MoqKit

/// moq-kit's diagnostics channel: `Player.diagnostics()`.
@Suite("Player diagnostics", .serialized, .timeLimit(.minutes(2)))
struct PlayerDiagnosticsTests {
    @Test("moqsrc's messages become typed events: a drop with its stage and reason, stalls, samples")
    func mapping() {
        let drop = PipelineEvent.from(
            message: "moq-drop",
            fields: [
                "kind": .string("video"), "track": .string("0.avc1"), "stage": .string("timeline"),
                "reason": .string("stale-vs-playback"), "pts-us": .uint(40_000), "group": .uint(7), "count": .uint(1),
                "bytes": .uint(1200),
            ])
        #expect(
            drop == [
                .frameDropped(
                    FrameDrop(
                        kind: "video", track: "0.avc1", stage: .timeline, reason: .staleVsPlayback, ptsUs: 40_000,
                        groupSequence: 7, count: 1, bytes: 1200))
            ])
        #expect(PipelineEvent.from(message: "moq-drop", fields: ["stage": .string("decoder")]).isEmpty)
        #expect(
            PipelineEvent.from(
                message: "track.stall.end", fields: ["kind": .string("audio"), "duration-ms": .double(250)])
                == [.stallEnded(kind: "audio", track: "", cause: .networkIdle, duration: .milliseconds(250))])
        let samples = PipelineEvent.from(
            message: "stats",
            fields: [
                "video-track": .string("0.avc1"), "video-latency-ms": .double(120), "video-buffer-ms": .double(40),
                "target-latency-ms": .uint(100), "buffering": .string("live"), "recv-rate-bps": .uint(800_000),
            ])
        #expect(
            samples == [
                .latencySample(
                    kind: "video", current: .milliseconds(120), target: .milliseconds(100), buffer: .milliseconds(40)),
                .bandwidthSample(receiveBps: 800_000, sendBps: nil),
            ])
        #expect(PipelineEvent.from(message: "now-playing", fields: [:]).isEmpty)
    }

    @Test("a playing Player's diagnostics: latency and bandwidth samples, with moqsrc's diagnostics on")
    func playing() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let publisher = Publisher()
            try publisher.addVideoTrack(source: TestPattern(), config: PublisherPlayerTests.small)
            try await session.publish(path: "diag", publisher: publisher)
            try await publisher.start()
            // Another application plays: what it reads comes through the relay.
            let viewer = Session(url: relay.url(), options: relay.sessionOptions)
            try await viewer.connect()
            let catalog = try await viewer.firstCatalog { !$0.playableVideoTracks.isEmpty }.catalog
            let player = try Player(catalog: catalog, output: .headless)
            let diagnostics = Collected(player.diagnostics())
            #expect(player.pipelineDescription.contains("diagnostics=true"))
            try await player.play()
            try await eventually("latency and bandwidth samples", timeout: .seconds(30)) {
                let all = diagnostics.all
                let latency = all.contains {
                    if case .latencySample(let kind, let current, _, _) = $0 {
                        return kind == "video" && current != nil
                    }
                    return false
                }
                let bandwidth = all.contains {
                    if case .bandwidthSample(let rx, _) = $0 { return (rx ?? 0) > 0 }
                    return false
                }
                return latency && bandwidth
            }
            await player.stop()
            await diagnostics.finished()
            publisher.stop()
            await viewer.close()
            await session.close()
        }
    }
}

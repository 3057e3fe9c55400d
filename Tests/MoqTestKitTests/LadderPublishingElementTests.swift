// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqCatalog
import MoqPipeline
import MoqTestKit
import Testing

/// moqsink with several video pads of one picture (a tee into three encoders): the catalog lists
/// them as renditions with their bitrates, and every rendition starts its groups at the same
/// frame (the keyframe grid), read back through the relay with the SwiftMoQ API.
@Suite("moqsink: a ladder's catalog and aligned groups", .serialized, .timeLimit(.minutes(2)))
struct LadderPublishingElementTests {
    init() { SwiftMoQElements.register() }

    /// Group starts (µs) of `track` seen in about 3 s.
    static func groupStarts(_ relay: TestRelay, _ broadcast: String, track: String, count: Int) async throws -> [UInt64]
    {
        let reader = try await TrackSubscriber.subscribe(relay, broadcast: broadcast, track: track)
        defer { reader.close() }
        var starts: [UInt64] = []
        while starts.count < count, let frame = try await reader.next(timeout: .seconds(10)) {
            if frame.index == 0, !frame.isEndOfGroup { starts.append(frame.timestampMicros) }
        }
        return starts
    }

    static func publisher(_ relay: TestRelay, _ broadcast: String, keyframeMs: Int) -> Pipeline {
        var launch =
            "moqsink name=moq url=\(relay.url()) broadcast=\(broadcast) tls-fingerprint=\(relay.fingerprint) "
            + "keyframe-interval=\(keyframeMs) sink_0::track=hi sink_1::track=lo "
            + "videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! tee name=t "
        for (i, (width, height, kbps)) in [(320, 180, 600), (160, 90, 150)].enumerated() {
            // key-int-max far above the grid: every group boundary comes from the sink's requests.
            launch +=
                "t. ! queue ! videoscale ! video/x-raw,width=\(width),height=\(height) "
                + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=3000 bitrate=\(kbps) "
                + "! h264parse ! video/x-h264,stream-format=avc,alignment=au ! moq.sink_\(i) "
        }
        return Pipeline(launch: launch)
    }

    /// Runs `body` while the two-rendition publisher sends `name` (made unique) to a test relay.
    static func withLadder(
        _ name: String, keyframeMs: Int, _ body: (TestRelay, String) async throws -> Void
    ) async throws {
        try await withTestRelay() { (relay) async throws in
            let broadcast = uniqueBroadcast(name)
            let publisher = Self.publisher(relay, broadcast, keyframeMs: keyframeMs)
            try publisher.start()
            defer { publisher.stop() }
            try await body(relay, broadcast)
        }
    }

    @Test("renditions with the encoders' bitrates; groups of both start at the same frames, every 500 ms")
    func alignedLadder() async throws {
        try await Self.withLadder("ladder-pub", keyframeMs: 500) { (relay, broadcast) async throws in
            let catalogReader = try await TrackSubscriber.subscribe(
                relay, broadcast: broadcast, track: HangCatalog.trackName, container: .raw)
            var bitrates: [String: UInt64] = [:]
            while bitrates.count < 2, let frame = try await catalogReader.next(timeout: .seconds(10)) {
                let catalog = try HangCatalog(json: frame.payload)
                for rendition in catalog.renditions {
                    if case .video(let v) = rendition.config, let b = v.bitrate { bitrates[rendition.name] = b }
                }
            }
            catalogReader.close()
            // x264enc's maximum-bitrate tag: its kbit/s × 1024.
            #expect(bitrates == ["hi": 600 * 1024, "lo": 150 * 1024])
            async let hi = Self.groupStarts(relay, broadcast, track: "hi", count: 6)
            async let lo = Self.groupStarts(relay, broadcast, track: "lo", count: 6)
            let (hiStarts, loStarts) = try await (hi, lo)
            let common = Set(hiStarts).intersection(loStarts)
            #expect(common.count >= 4, "hi \(hiStarts) lo \(loStarts)")
            let spacing = zip(hiStarts, hiStarts.dropFirst()).map { ($1 - $0) / 1000 }
            #expect(spacing.allSatisfy { $0 >= 450 && $0 <= 550 }, "\(spacing) ms")
        }
    }

    @Test("without the grid (keyframe-interval=0), the encoders' own GOP decides: no group boundary for seconds")
    func withoutGrid() async throws {
        try await Self.withLadder("ladder-nogrid", keyframeMs: 0) { (relay, broadcast) async throws in
            let reader = try await TrackSubscriber.subscribe(relay, broadcast: broadcast, track: "hi")
            defer { reader.close() }
            var frames = 0
            var groups = 0
            while frames < 90, let frame = try await reader.next(timeout: .seconds(10)) {
                if frame.isEndOfGroup { continue }
                frames += 1
                if frame.index == 0 { groups += 1 }
            }
            #expect(frames == 90)
            #expect(groups == 1, "3 s of one group: the grid is what cut them")
        }
    }
}

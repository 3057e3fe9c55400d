// SPDX-License-Identifier: MIT
import GstSwiftMoQ
import MoqPipeline
import MoqTestKit
import Testing

/// moqsrc plays a sequence of broadcasts (a `prefix` follow, or `broadcast` + `queue`) without a
/// gap: the next one is subscribed and prerolled while the current one plays, and its first
/// frame starts where the current one's last frame ends.
@Suite("moqsrc plays a queue of broadcasts gaplessly", .serialized, .timeLimit(.minutes(2)))
struct QueueTests {
    init() { SwiftMoQElements.register() }

    /// A live 20 ms Opus tone published as `broadcast`; `buffers` 20 ms buffers, then EOS
    /// (the broadcast ends), or for ever when nil.
    private static func tone(_ relay: TestRelay, _ broadcast: String, buffers: Int?, freq: Double) -> Pipeline {
        Pipeline {
            Element("audiotestsrc").set("is-live", true).set("samplesperbuffer", 960).set("freq", freq)
                .set("num-buffers", buffers ?? -1)
            Caps("audio/x-raw", ["rate": 48000, "channels": 1])
            Element("audioconvert")
            Element("opusenc").set("frame-size", 20)
            Element.moqsink(relay: relay, broadcast: broadcast)
        }
    }

    private static func player(_ relay: TestRelay, configure: (Element) -> Element) -> Pipeline {
        Pipeline {
            configure(Element.moqsrc(relay: relay, broadcast: "").set("latency", 300))
            Branch {
                From("src", pad: "audio_0")
                Element("opusdec")
                Element("appsink", name: "sink").set("sync", false)
            }
        }
    }

    /// Plays `first` (2 s, then it ends) and then `second` (live, started once `first` plays),
    /// and checks the decoded audio across the switch.
    private func playsGaplessly(
        first: String, second: String, relay: TestRelay, player: Pipeline
    ) async throws {
        let a = Self.tone(relay, first, buffers: 100, freq: 440)
        try player.start()
        let sink = try AppSink(player, name: "sink")
        try a.start()
        _ = try #require(try await sink.pull(timeout: .seconds(20)), "the first broadcast never played")
        let b = Self.tone(relay, second, buffers: nil, freq: 880)
        try b.start()

        // Decoded buffers until 1 s of the second broadcast played.
        var samples: [Sample] = []
        var switchIndex: Int?
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            guard let sample = try await sink.pull(timeout: .seconds(5)) else { break }
            if switchIndex == nil, let last = samples.last?.publisherTime, let now = sample.publisherTime, now < last {
                // The second publisher's clock started later: its timestamps restart lower.
                switchIndex = samples.count
            }
            samples.append(sample)
            if let s = switchIndex, samples.count - s >= 50 { break }
        }
        let at = try #require(switchIndex, "never switched to \(second): \(player.collectedMessages.suffix(5))")
        let before = samples[at - 1]
        let after = samples[at]
        let end = try #require(before.pts.flatMap { pts in before.duration.map { pts + $0 } })
        let start = try #require(after.pts)
        let gap = start - end
        // Gapless: the next broadcast's first frame starts within one 20 ms frame of where the
        // previous one's last frame ends, and does not overlap it.
        #expect(gap >= .milliseconds(-1) && gap <= .milliseconds(20), "gap \(gap) at the switch")
        // No gap elsewhere either (timestamps continuous within each broadcast).
        for i in 1..<samples.count where i != at {
            guard let p = samples[i - 1].pts, let d = samples[i - 1].duration, let q = samples[i].pts else { continue }
            #expect(q - (p + d) <= .milliseconds(20), "gap of \(q - (p + d)) at buffer \(i)")
        }
        // The second broadcast was subscribed and prerolled before the first one ended.
        let events = player.collectedMessages.compactMap { message -> (String, [String: PipelineValue])? in
            if case .element(_, let name, let fields, _) = message, name.hasPrefix("queue.") { return (name, fields) }
            return nil
        }
        let preroll = events.firstIndex { $0.0 == "queue.preroll" }
        let advance = events.firstIndex { $0.0 == "queue.advance" }
        #expect(preroll != nil && advance != nil && preroll! < advance!, "\(events.map(\.0))")
        if let advance { #expect(events[advance].1["prerolled"]?.boolValue == true, "\(events[advance].1)") }
        #expect(!player.collectedMessages.contains { $0.isError }, "\(player.collectedMessages.filter(\.isError))")
        player.stop()
        a.stop()
        b.stop()
    }

    @Test("prefix follow: the next broadcast under the prefix starts where the previous one ends")
    func prefixFollow() async throws {
        try await withTestRelay() { (relay) async throws in
            let room = uniqueBroadcast("queue")
            let player = Self.player(relay) { $0.set("prefix", room + "/") }
            try await playsGaplessly(first: room + "/a", second: room + "/b", relay: relay, player: player)
        }
    }

    @Test("queue property: broadcast, then the queued one where it ends")
    func explicitQueue() async throws {
        try await withTestRelay() { (relay) async throws in
            let room = uniqueBroadcast("queue")
            let player = Self.player(relay) {
                $0.set("broadcast", room + "/first").set("queue", "\(room)/second")
            }
            try await playsGaplessly(first: room + "/first", second: room + "/second", relay: relay, player: player)
        }
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqPipeline
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// The short fault cases `make test` runs: moqsink → proxy → relay → proxy → moqsrc under one
/// impairment each, a few seconds long. They judge playback against a 300 ms latency budget,
/// so they run alone (`SOLO_TESTS` in the Makefile), not beside the parallel suite.
@Suite("Media under network faults (short)", .serialized, .timeLimit(.minutes(2)))
struct NetworkFaultTests {
    init() { SwiftMoQElements.register() }

    private static func player(_ relay: TestRelay, _ broadcast: String, via proxy: UDPProxy, latency: Int = 300)
        -> Pipeline
    {
        Pipeline {
            // A fixed budget: these cases judge playback against it.
            Element.moqsrc(relay: relay, broadcast: broadcast, via: proxy).set("latency-mode", "fixed").set(
                "latency", latency)
            Branch {
                From("src", pad: "video_0")
                Queue()
                Element("appsink", name: "sink").set("sync", false)
            }
        }
    }

    /// A publisher and a player of one broadcast through `path`'s shared proxy, both started, and
    /// the player's appsink once `frames` samples came through it.
    private static func playing(_ path: FaultPath, _ name: String, frames: Int) async throws -> (
        publisher: Pipeline, player: Pipeline, sink: AppSink
    ) {
        let broadcast = uniqueBroadcast(name)
        let publisher = h264Publisher(.moqsink(relay: path.relay, broadcast: broadcast, via: path.playLeg))
        let player = Self.player(path.relay, broadcast, via: path.playLeg)
        try publisher.start()
        try player.start()
        let sink = try AppSink(player, name: "sink")
        #expect(try await sink.pull(count: frames, timeout: .seconds(20)).count == frames)
        return (publisher, player, sink)
    }

    private static func reconnects(_ pipeline: Pipeline, _ element: String) throws -> Int64? {
        try pipeline.element(named: element).property("stats")?.structureValue?["reconnects"]?.intValue
    }

    @Test("NAT rebinding mid-stream: both QUIC connections migrate, no reconnect, frames keep coming")
    func natRebinding() async throws {
        try await FaultPath.with(shared: true) { (path) async throws in
            let proxy = path.playLeg
            let (publisher, player, sink) = try await Self.playing(path, "rebind", frames: 10)
            #expect(proxy.statistics.clients == 2)

            let rebindAt = try #require(publisher.runningTime)
            proxy.rebind()
            try await eventually("the proxy to rebind") { proxy.statistics.rebinds == 1 }
            let forwardedAtRebind = proxy.statistics.forwardedToClient
            // A frame captured a second after the rebind went through the new path both ways.
            var after = 0
            while after < 15 {
                let sample = try #require(try await sink.pull(timeout: .seconds(20)))
                if let t = sample.publisherTime, t > rebindAt + .seconds(1) { after += 1 }
            }
            #expect(proxy.statistics.forwardedToClient > forwardedAtRebind)
            #expect(proxy.statistics.clients == 2, "a reconnect would come from a new client socket")
            #expect(try Self.reconnects(publisher, "moq") == 0)
            #expect(try Self.reconnects(player, "src") == 0)
            #expect(
                !publisher.collectedMessages.contains { $0.isError || $0.isWarning }, "\(publisher.collectedMessages)")
            #expect(!player.collectedMessages.contains { $0.isError || $0.isWarning }, "\(player.collectedMessages)")
            player.stop()
            publisher.stop()
        }
    }

    @Test("a blackhole past the idle timeout: both elements back within 4.5 s of the path returning, no ERROR")
    func longBlackhole() async throws {
        try await FaultPath.with(shared: true) { (path) async throws in
            let proxy = path.playLeg
            let (publisher, player, sink) = try await Self.playing(path, "outage", frames: 5)

            proxy.blackhole()
            // Both sessions go idle after 10 s; reconnect attempts fail until the path returns.
            try await Task.sleep(for: .seconds(12))
            while sink.tryPull() != nil {}
            proxy.restore()
            let restored = ContinuousClock.now
            let position = try #require(publisher.runningTime)
            while true {
                let sample = try #require(try await sink.pull(timeout: .seconds(20)))
                if let t = sample.publisherTime, t > position { break }
            }
            let recovery = ContinuousClock.now - restored
            // Worst case for each session: an attempt whose next Initial falls after its 2 s limit,
            // then up to 1 s of backoff and a handshake (~3 s); plus the catalog and subscription,
            // the next keyframe (0.5 s groups) and the 300 ms render delay. Typically about 2 s
            // (the 30 s row of `make faults`); the bound leaves room for a loaded CI machine.
            #expect(recovery < .milliseconds(4500), "recovered \(recovery) after the path returned")
            #expect(try Self.reconnects(publisher, "moq") == 1)
            #expect(try Self.reconnects(player, "src") == 1)
            #expect(!publisher.collectedMessages.contains { $0.isError }, "\(publisher.collectedMessages)")
            #expect(!player.collectedMessages.contains { $0.isError }, "\(player.collectedMessages)")
            player.stop()
            publisher.stop()
        }
    }

    @Test("a 1.2 s round trip: a client still reconnects after a relay restart (its attempts grow past 2 s)")
    func slowPathReconnect() async throws {
        try await FaultPath.with(shared: true) { (path) async throws in
            path.impair(.delay(.milliseconds(600)))
            let sessions = Lock(0)
            var handlers = ReconnectingSession.Handlers()
            handlers.session = { _, _ in sessions.withLock { $0 += 1 } }
            let connection = ReconnectingSession(
                url: try MoqURL(path.relay.url(via: path.playLeg)), options: path.relay.clientOptions,
                handlers: handlers)
            connection.start()
            try await eventually("the first session", timeout: .seconds(20)) { sessions.withLock { $0 } == 1 }
            await path.relay.stop()
            try await path.relay.restart()
            // A handshake here takes 2–3 round trips (3.6 s): 2 s attempts alone would never finish.
            try await eventually("the reconnect", timeout: .seconds(30)) { sessions.withLock { $0 } == 2 }
            #expect(connection.reconnects + connection.handovers == 1)
            connection.stop()
        }
    }

    @Test(
        "adaptive latency (the default): 80 ms more delay on the player's path grows the margin by about that, within latency"
    )
    func adaptiveMarginFollowsDelay() async throws {
        try await FaultPath.with { (path) async throws in
            let broadcast = uniqueBroadcast("adaptive")
            let publisher = h264Publisher(.moqsink(relay: path.relay, broadcast: broadcast, via: path.publishLeg))
            let player = Pipeline {
                Element.moqsrc(relay: path.relay, broadcast: broadcast, via: path.playLeg)
                Branch {
                    From("src", pad: "video_0")
                    Queue()
                    Element("appsink", name: "sink").set("sync", false)
                }
            }
            func stat(_ name: String) throws -> Double {
                try player.element(named: "src").property("stats")?.structureValue?[name]?.doubleValue ?? -1
            }
            try publisher.start()
            try player.start()
            let sink = try AppSink(player, name: "sink")
            #expect(try await sink.pull(count: 30, timeout: .seconds(20)).count == 30)
            let before = try stat("latency-margin-ms")
            let retargetsBefore = try stat("retargets")
            path.playLeg.impair(Impairment(toServer: .none, toClient: LinkImpairment(delay: .milliseconds(80))))
            // Two seconds of frames after the step (groups of 15 frames: the margin grows at a group start).
            #expect(try await sink.pull(count: 60, timeout: .seconds(20)).count == 60)
            let after = try stat("latency-margin-ms")
            // 80 ms more delay, 20 ms of which a video sink tolerates: the margin reaches ~70 ms (+10 ms
            // headroom) whatever it was before the step, never above latency (100 ms by default).
            #expect(after >= 50 && after <= 100, "margin \(before) → \(after) ms")
            #expect(try stat("retargets") > retargetsBefore)
            #expect(player.collectedMessages.first(where: \.isError) == nil)
            player.stop()
            publisher.stop()
        }
    }

    @Test("5 % loss and 50 ± 20 ms jitter both ways on both legs, latency=300: ≥ 98 % of video frames play")
    func lossAndJitter() async throws {
        try await FaultPath.with { (path) async throws in
            let (relay, publishLeg, playLeg) = (path.relay, path.publishLeg, path.playLeg)
            let broadcast = uniqueBroadcast("lossy")
            // 10 s at 30 fps, as the issue asks of the short cases: the target is a rate, and over
            // 5 s a single group tail delayed past the budget (3 frames of 105) already missed it.
            let frames = 300
            let publisher = Pipeline {
                // The matrix row's source (`make faults`): a moving ball under a 1 Mbit/s cap. The default
                // pattern's noise block makes ~760 kbit/s even at 160×120, and at that rate this path's
                // reordering (packets up to 40 ms apart overtake each other) has ngtcp2 declare about a
                // quarter of the relay's packets lost (its time threshold is 9/8 of an RTT, not adaptive):
                // BBR backs off and the relay resets group tails as OLD. See docs/reliability.md.
                Element("videotestsrc").set("is-live", true).set("num-buffers", frames).set("pattern", "ball")
                Caps("video/x-raw", ["format": "I420", "width": 160, "height": 120, "framerate": Fraction(30, 1)])
                Element("x264enc").set("tune", "zerolatency").set("speed-preset", "ultrafast").set("key-int-max", 15)
                    .set("bitrate", 1000)
                Element("h264parse")
                Caps("video/x-h264", ["stream-format": "avc", "alignment": "au"])
                Element.moqsink(relay: relay, broadcast: broadcast, via: publishLeg)
            }
            let player = Self.player(relay, broadcast, via: playLeg)
            try player.start()
            let sink = try AppSink(player, name: "sink")
            path.impair(Impairment.loss(0.05).with(jitter: .milliseconds(20), around: .milliseconds(50)))
            try publisher.start()

            // Frames by the publisher's timestamp (moqsrc's meta).
            var played: Set<Int> = []
            let frame = Duration.nanoseconds(33_333_333)
            // Connecting through the faults may take a few lossy handshake rounds.
            if let i = try await sink.pull(timeout: .seconds(20))?.frameIndex(every: frame) { played.insert(i) }
            var quietSince = ContinuousClock.now
            while ContinuousClock.now - quietSince < .seconds(3) {
                if let sample = sink.tryPull() {
                    if let i = sample.frameIndex(every: frame) { played.insert(i) }
                    quietSince = .now
                } else {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            // Startup (connecting through the faults, joining at a group) is reported, not judged
            // here; from one second after the first frame played to the last frame published,
            // every frame counts.
            let first = try #require(played.min(), "no frame played")
            try #require(first + 60 <= frames, "playback started only at frame \(first) of \(frames)")
            let steady = Set((first + 30)..<frames)
            let rendered = Double(played.intersection(steady).count) / Double(steady.count)
            let missing = steady.subtracting(played).sorted()
            // When frames are missing, where they were lost: the relay's counters, moqsrc's stats.
            let relayCounters = (await relay.relay?.sessionStats() ?? []).map {
                "reset-old \($0.counters.groupsResetAsOld), dropped-for-budget \($0.counters.groupsDroppedForBudget), "
                    + "lost \($0.packetsLost), rtt \($0.rttMicros) µs, sent \($0.bytesSent) B at \($0.sendRateBps) bit/s"
            }
            let srcStats = try player.element(named: "src").property("stats")?.structureValue?.description ?? "-"
            #expect(
                rendered >= 0.98,
                """
                \(Int(rendered * 100)) % of frames \(first + 30)..<\(frames) played; missing \(missing); first played \(first); \
                relay sessions: \(relayCounters); moqsrc: \(srcStats); \
                publish leg \(publishLeg.statistics), play leg \(playLeg.statistics)
                """
            )
            #expect(publishLeg.statistics.dropped > 0 && playLeg.statistics.dropped > 0, "the loss was applied")
            #expect(playLeg.statistics.overtaken > 0, "the jitter reordered datagrams")
            #expect(!player.collectedMessages.contains { $0.isError }, "\(player.collectedMessages)")
            player.stop()
            publisher.stop()
        }
    }
}

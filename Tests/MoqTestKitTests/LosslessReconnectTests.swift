// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqKit
import MoqPipeline
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// Reconnects that lose nothing: a sine (Opus, 20 ms frames: each frame's publisher timestamp is
/// its sample counter) and a data track of sequence numbers, published by one moqsink, played by
/// moqsrc (`latency=6000`) and read by MoqKit's ``Session/subscribeTrack(broadcast:name:)``,
/// through an outage, a relay restart and a failover between two joined relays. Every audio frame
/// and every sequence number arrives exactly once: the caches hold what the outage kept from the
/// players, the resubscriptions ask for it, and what they repeat is recognised.
///
/// Run alone (`SOLO_TESTS` in the Makefile): they judge delivery against a latency budget.
@Suite("Reconnects that lose nothing", .serialized, .timeLimit(.minutes(3)))
struct LosslessReconnectTests {
    init() { SwiftMoQElements.register() }

    /// The audio frame duration (opusenc's default, µs); the first frame is shorter (the encoder's
    /// pre-skip), so a frame's publisher timestamp is its sample counter (× 48 kHz).
    static let frameMicros = 20_000

    /// The player's latency budget: longer than the outages below plus QUIC's recovery after
    /// them (its retransmissions back off through a blackhole: the first after the path returns
    /// can come a second or two later), so that what the caches kept is still within the budget
    /// — at the relay and, since the relay asks upstream with it, at the publisher — when it moves.
    /// With 4 s, a 3 s blackhole lost a 60 ms run of audio in 1 of 6 runs.
    static let latencyMs = 6000

    /// The network and relays one run goes through.
    private struct Topology {
        let publishTo: TestRelay
        let playFrom: TestRelay
        let publishProxy: UDPProxy
        let playProxy: UDPProxy

        init(publishTo: TestRelay, playFrom: TestRelay, publishProxy: UDPProxy, playProxy: UDPProxy) {
            (self.publishTo, self.playFrom, self.publishProxy, self.playProxy) = (
                publishTo, playFrom, publishProxy, playProxy
            )
        }

        /// Both legs through `path`'s proxies to its relay.
        init(_ path: FaultPath) {
            self.init(
                publishTo: path.relay, playFrom: path.relay, publishProxy: path.publishLeg, playProxy: path.playLeg)
        }
    }

    /// What a run received.
    private struct Received {
        /// Publisher timestamps (µs) of the audio frames, in arrival order.
        var audio: [Int] = []
        var data: [Int] = []
        /// The publisher's running time (µs) when the fault ended.
        var faultEndedAt = 0
    }

    /// Missing and repeated values of `values` over `range`.
    private static func audit(_ values: [Int], over range: ClosedRange<Int>) -> (missing: [Int], repeated: Int) {
        let inRange = values.filter { range.contains($0) }
        let unique = Set(inRange)
        return (range.filter { !unique.contains($0) }, inRange.count - unique.count)
    }

    /// Publishes, plays and reads the data track through `topology`; `fault` runs after both
    /// kinds of media arrived; `endWithEOS` ends the publisher with EOS right after the fault
    /// started (Ctrl-C on `gst-launch-1.0 -e`) instead of after it.
    private func run(
        _ topology: Topology, sent: Lock<Int> = Lock(0), endDuring: Bool = false,
        fault: @escaping @Sendable () async throws -> Void
    ) async throws -> (received: Received, sent: Int, publisher: Pipeline, player: Pipeline) {
        var result = try await play(topology, sent: sent, endDuring: endDuring, fault: fault)
        result.received.faultEndedAt = result.faultEndedAt
        return (result.received, result.sent, result.publisher, result.player)
    }

    private func play(
        _ topology: Topology, sent: Lock<Int>, endDuring: Bool, fault: @escaping @Sendable () async throws -> Void
    ) async throws -> (received: Received, sent: Int, publisher: Pipeline, player: Pipeline, faultEndedAt: Int) {
        let broadcast = uniqueBroadcast("lossless")
        let player = Pipeline(
            launch: "moqsrc name=src \(topology.playFrom.connectionProperties(via: topology.playProxy)) "
                + "broadcast=\(broadcast) latency=\(Self.latencyMs) src.audio_0 ! appsink name=audio sync=false")
        let publisher = Pipeline(
            launch: "audiotestsrc is-live=true wave=sine ! audio/x-raw,rate=48000,channels=1 ! opusenc ! moq.sink_0 "
                + "appsrc name=data is-live=true do-timestamp=true format=time caps=application/x-moq-data ! moq.sink_1 "
                + "moqsink name=moq sink_1::track=seq "
                + topology.publishTo.moqsinkProperties(broadcast: broadcast, via: topology.publishProxy))
        let session = MoqKit.Session(
            url: topology.playFrom.url(via: topology.playProxy),
            options: SessionOptions(tls: TLSOptions(fingerprint: topology.playFrom.fingerprint)))
        try await session.connect()
        let subscription = try await session.subscribeTrack(broadcast: broadcast, name: "seq")
        try player.start()
        try publisher.start()
        let audioSink = try AppSink(player, name: "audio")
        let dataSource = try AppSource(publisher, name: "data")

        let received = Lock(Received())
        let audioTask = Task {
            while !Task.isCancelled {
                guard let sample = audioSink.tryPull() else {
                    try? await Task.sleep(for: .milliseconds(2))
                    continue
                }
                if let t = sample.publisherTime {
                    received.withLock { $0.audio.append(Int(micros(t))) }
                }
            }
        }
        let dataTask = Task {
            do {
                for try await object in subscription.objects {
                    if let n = Int(String(decoding: object.payload, as: UTF8.self)) {
                        received.withLock { $0.data.append(n) }
                    }
                }
            } catch {}
        }
        let stopSending = Lock(false)
        let sender = Task {
            var n = 0
            while !stopSending.withLock({ $0 }) {
                try dataSource.push(Sample(Array("\(n)".utf8)))
                n += 1
                sent.withLock { $0 = n }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await eventually("audio and data to arrive", timeout: .seconds(20)) {
            received.withLock { !$0.audio.isEmpty && !$0.data.isEmpty }
        }
        try await Task.sleep(for: .seconds(1))
        var faultEndedAt = 0
        if endDuring {
            async let faulted: Void = fault()
            try await Task.sleep(for: .milliseconds(500))
            stopSending.withLock { $0 = true }
            _ = try? await sender.value
            try publisher.sendEOS()
            // As gst-launch-1.0 -e does: the pipeline stops once EOS reached the bus.
            let stopper = Task {
                // moqsink's bound (eos-delivery, 10 s) and a margin.
                try await eventually("the publisher's EOS", timeout: .seconds(12)) {
                    publisher.collectedMessages.contains(where: \.isEOS)
                }
                publisher.stop()
            }
            try await faulted
            try await stopper.value
        } else {
            try await fault()
            faultEndedAt = Int(micros(publisher.runningTime ?? .zero))
            try await Task.sleep(for: .seconds(2))
            stopSending.withLock { $0 = true }
            _ = try? await sender.value
        }
        let total = sent.withLock { $0 }
        try await eventually("the data to arrive", timeout: .seconds(15)) {
            received.withLock { $0.data.contains(total - 1) }
        }
        try await Task.sleep(for: .seconds(1))
        audioTask.cancel()
        dataTask.cancel()
        subscription.close()
        await session.close()
        return (received.withLock { $0 }, total, publisher, player, faultEndedAt)
    }

    private static func check(_ r: Received, sent: Int, _ label: String) {
        let data = audit(r.data, over: 0...(sent - 1))
        #expect(
            data.missing.isEmpty && data.repeated == 0,
            "\(label): data missing \(data.missing), repeated \(data.repeated)")
        // Audio: each timestamp once, and no step between consecutive ones longer than a frame.
        let unique = Set(r.audio).sorted()
        guard let first = unique.first, let last = unique.last else {
            Issue.record("\(label): no audio")
            return
        }
        let gaps = zip(unique, unique.dropFirst()).filter { $1 - $0 > frameMicros }.map { "\($0)→\($1) µs" }
        #expect(
            gaps.isEmpty && r.audio.count == unique.count,
            "\(label): audio \(first)...\(last) µs: gaps \(gaps), \(r.audio.count - unique.count) repeated")
        #expect(
            last > r.faultEndedAt + 1_000_000,
            "\(label): audio played past the fault (\(first)...\(last) µs, the fault ended at \(r.faultEndedAt) µs)")
    }

    /// New sessions after the first: reconnects after a loss, plus handovers after GOAWAY (a relay
    /// shutting down sends one; the successor may reach the restarted relay).
    private static func sessionsReplaced(_ pipeline: Pipeline, _ element: String) throws -> Int64 {
        let stats = try pipeline.element(named: element).property("stats")?.structureValue
        return (stats?["reconnects"]?.intValue ?? 0) + (stats?["handovers"]?.intValue ?? 0)
    }

    @Test("a 3 s outage on both legs: every audio frame and sequence number once")
    func outage() async throws {
        try await FaultPath.with { (path) async throws in
            let topology = Topology(path)
            let (received, sent, publisher, player) = try await run(topology) {
                path.blackhole()
                try await Task.sleep(for: .seconds(3))
                path.restore()
            }
            Self.check(received, sent: sent, "outage")
            #expect(!(publisher.collectedMessages + player.collectedMessages).contains { $0.isError })
            player.stop()
            publisher.stop()
        }
    }

    @Test("a relay restart: the publisher's cache refills the new relay, nothing lost or repeated")
    func relayRestart() async throws {
        try await FaultPath.with { (path) async throws in
            let relay = path.relay
            let topology = Topology(path)
            let (received, sent, publisher, player) = try await run(topology) {
                await relay.stop()
                try await Task.sleep(for: .seconds(1))
                try await relay.restart()
            }
            Self.check(received, sent: sent, "relay restart")
            let replaced = (try Self.sessionsReplaced(publisher, "moq"), try Self.sessionsReplaced(player, "src"))
            #expect(replaced.0 == 1 && replaced.1 == 1, "new sessions: publisher, player \(replaced)")
            #expect(!(publisher.collectedMessages + player.collectedMessages).contains { $0.isError })
            player.stop()
            publisher.stop()
        }
    }

    @Test("failover: the edge relay (joined with upstream) sends GOAWAY to the origin and stops")
    func failover() async throws {
        let origin = try TestRelay.start()
        let edge = try TestRelay.start(upstream: origin)
        try await FaultPath.with(relay: origin) { (publishPath) async throws in
            let playPath = try FaultPath.start(relay: edge)
            let topology = Topology(
                publishTo: origin, playFrom: edge, publishProxy: publishPath.publishLeg, playProxy: playPath.playLeg)
            let (received, sent, publisher, player) = try await run(topology) {
                edge.relay?.goaway(uri: origin.url())
                try await Task.sleep(for: .seconds(1))
                await edge.stop()
            }
            Self.check(received, sent: sent, "failover")
            let stats = try player.element(named: "src").property("stats")?.structureValue
            #expect(
                stats?["handovers"]?.intValue == 1 && stats?["reconnects"]?.intValue == 0,
                "player: \(String(describing: stats))")
            #expect(!(publisher.collectedMessages + player.collectedMessages).contains { $0.isError })
            player.stop()
            publisher.stop()
            await playPath.stop()
        }
    }

    @Test("EOS while the relay is down: what was captured is delivered once the relay is back")
    func endOfStreamWhileReconnecting() async throws {
        try await FaultPath.with { (path) async throws in
            let relay = path.relay
            let topology = Topology(path)
            let (received, sent, publisher, player) = try await run(topology, endDuring: true) {
                await relay.stop()
                try await Task.sleep(for: .seconds(1.5))
                try await relay.restart()
            }
            let data = Self.audit(received.data, over: 0...(sent - 1))
            #expect(
                data.missing.isEmpty && data.repeated == 0, "data missing \(data.missing), repeated \(data.repeated)")
            player.stop()
            publisher.stop()
        }
    }
}

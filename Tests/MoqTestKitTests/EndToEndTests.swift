// SPDX-License-Identifier: MIT
import GstSwiftMoQ
import MoqPipeline
import MoqTestKit
import Testing

/// videotestsrc ! x264enc ! h264parse ! moqsink → in-process relay → SwiftMoQ subscriber, with faults.
@Suite("moqsink through the in-process relay", .serialized, .timeLimit(.minutes(2)))
struct EndToEndTests {
    init() { SwiftMoQElements.register() }

    @Test("through the UDP proxy: frames flow, stop during a blackhole, and flow again after it")
    func blackholeAndRecovery() async throws {
        try await withTestRelay() { (relay) async throws in
            let proxy = try UDPProxy.start(forwardingTo: relay.port)
            let broadcast = uniqueBroadcast("blackhole")
            let publisher = h264Publisher(.moqsink(relay: relay, broadcast: broadcast, via: proxy))
            let probe = LatencyProbe()
            try publisher.start(.paused)
            try probe.attachPublisher(to: publisher, element: "moq", pad: "sink_0")
            try publisher.setState(.playing)

            let reader = try await TrackSubscriber.subscribe(relay, broadcast: broadcast, track: "0.avc1")
            var frames = 0
            while frames < 15, let f = try await reader.next() {
                if f.isEndOfGroup { continue }
                probe.received(key: f.timestampMicros)
                frames += 1
            }
            #expect(frames == 15)
            #expect(proxy.statistics.forwardedToServer > 0)
            #expect(proxy.statistics.clients == 1)  // only the publisher goes through the proxy

            proxy.blackhole()
            let droppedBefore = proxy.statistics.droppedToServer
            // A few of the publisher's datagrams lost: QUIC must retransmit them once the link is back (a long
            // outage would instead outlast the 10 s idle timeout and test reconnection).
            try await eventually("the publisher's datagrams to be dropped") {
                proxy.statistics.droppedToServer >= droppedBefore + 5
            }
            proxy.restore()
            let restored = try #require(publisher.runningTime)
            // A frame captured after the link came back proves publishing recovered.
            let after = try await reader.next(timeout: .seconds(30)) {
                !$0.isEndOfGroup && $0.timestampMicros > micros(restored)
            }
            probe.received(key: after.timestampMicros)
            #expect(!after.payload.isEmpty)
            #expect(!publisher.collectedMessages.contains(where: { $0.isError }), "\(publisher.collectedMessages)")

            let report = probe.report
            #expect(report.count >= 16, "\(report)")
            #expect(report.unmatched == 0, "\(report)")
            #expect(try #require(report.p50) <= (try #require(report.p99)))
            reader.close()
            publisher.stop()
            proxy.stop()
        }
    }

    @Test("the relay killed and restarted on the same port: a WARNING, no ERROR, and frames again")
    func relayRestart() async throws {
        try await withTestRelay() { (relay) async throws in
            let broadcast = uniqueBroadcast("restart")
            let publisher = h264Publisher(.moqsink(relay: relay, broadcast: broadcast))
            try publisher.start()
            var reader = try await TrackSubscriber.subscribe(relay, broadcast: broadcast, track: "0.avc1")
            #expect(try await reader.next() != nil)
            reader.close()

            await relay.stop()
            let warning = try await publisher.waitForMessage(timeout: .seconds(30)) {
                $0.isWarning && ($0.text?.contains("retrying") ?? false)
            }
            #expect(warning.source == "moq")
            try await relay.restart()
            let restarted = try #require(publisher.runningTime)

            reader = try await TrackSubscriber.subscribe(
                relay, broadcast: broadcast, track: "0.avc1", waitForTrack: .seconds(30))
            let frame = try await reader.next(timeout: .seconds(30)) {
                !$0.isEndOfGroup && $0.timestampMicros > micros(restarted)
            }
            #expect(!frame.payload.isEmpty)
            #expect(try publisher.element(named: "moq").property("status") == .nick("connected"))
            #expect(!publisher.collectedMessages.contains(where: { $0.isError }))
            reader.close()
            publisher.stop()
        }
    }

    @Test("EOS on the publisher finishes the track for the subscriber")
    func endOfStream() async throws {
        try await withTestRelay() { (relay) async throws in
            let broadcast = uniqueBroadcast("eos")
            let publisher = Pipeline {
                Element("videotestsrc").set("num-buffers", 30).set("is-live", true)
                Caps("video/x-raw", ["format": "I420", "width": 160, "height": 120, "framerate": Fraction(30, 1)])
                Element("x264enc").set("tune", "zerolatency").set("speed-preset", "ultrafast").set("key-int-max", 10)
                Element("h264parse")
                Caps("video/x-h264", ["stream-format": "avc", "alignment": "au"])
                Element.moqsink(relay: relay, broadcast: broadcast)
            }
            try publisher.start()
            let reader = try await TrackSubscriber.subscribe(relay, broadcast: broadcast, track: "0.avc1")
            try await publisher.waitForEOS(timeout: .seconds(30))
            var count = 0
            while let f = try await reader.next(timeout: .seconds(10)) { if !f.isEndOfGroup { count += 1 } }
            #expect(count > 0 && count <= 30)
            reader.close()
            publisher.stop()
        }
    }

    @Test("the README example: h264parse negotiates avc, track 0.avc1; outages and restarts leave no ERROR")
    func readmeExample() async throws {
        try await withTestRelay() { (relay) async throws in
            let proxy = try UDPProxy.start(forwardingTo: relay.port)
            let broadcast = uniqueBroadcast("readme")
            let publisher = Pipeline(
                launch: "videotestsrc is-live=true ! video/x-raw,format=I420 ! x264enc tune=zerolatency ! "
                    + "h264parse ! moqsink name=moq \(relay.moqsinkProperties(broadcast: broadcast, via: proxy))")
            try publisher.start()
            let reader = try await TrackSubscriber.subscribe(relay, broadcast: broadcast, track: "0.avc1")
            let frame = try await reader.next()
            #expect(frame?.payload.isEmpty == false)
            proxy.blackhole()
            proxy.restore()
            await relay.stop()
            try await relay.restart()
            let report = await publisher.runReport(until: .timeout, timeout: .seconds(1))
            try report.expectNoErrors()
            #expect(report.outcome == .timedOut)
            reader.close()
            proxy.stop()
        }
    }

    @Test("moqsink → relay → moqsrc ! appsink: H.264 samples arrive, both elements registered in-process")
    func moqsrcToAppSink() async throws {
        try await withTestRelay() { (relay) async throws in
            let broadcast = uniqueBroadcast("play")
            let publisher = h264Publisher(.moqsink(relay: relay, broadcast: broadcast))
            let player = Pipeline {
                Element.moqsrc(relay: relay, broadcast: broadcast)
                Branch {
                    From("src", pad: "video_0")
                    Queue()
                    Element("appsink", name: "sink").set("sync", false)
                }
            }
            try publisher.start()
            try player.start()
            let sink = try AppSink(player, name: "sink")
            let samples = try await sink.pull(count: 5, timeout: .seconds(20))
            #expect(samples.count == 5)
            #expect(samples.allSatisfy { $0.caps?.hasPrefix("video/x-h264") == true && !$0.bytes.isEmpty })
            #expect(samples.allSatisfy { $0.pts != nil })
            #expect(!player.collectedMessages.contains(where: { $0.isError }), "\(player.collectedMessages)")
            player.stop()
            publisher.stop()
        }
    }
}

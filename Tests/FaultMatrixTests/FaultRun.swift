// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqInteropSupport
import MoqPipeline
import MoqSync
import MoqTestKit

/// Runs one ``FaultCase``: moqsink (H.264 640×360 + Opus + a data track) → proxy → relay → proxy → moqsrc,
/// with an appsink rendering video on the clock (`sync=true`), and measures what played.
struct FaultRun {
    let fault: FaultCase
    static let frameNs: Int64 = 33_333_333
    static let warmUp: Duration = .seconds(4)
    static let drainAfter: Duration = .seconds(3)

    private struct Rendered: Sendable {
        var arrival: UInt64
        var index: Int
        var micros: UInt64
    }

    private static func index(_ d: Duration) -> Int {
        Int((d / .nanoseconds(frameNs)).rounded())
    }

    private static func micros(_ d: Duration) -> UInt64 {
        let (s, atto) = d.components
        return UInt64(max(0, s)) * 1_000_000 + UInt64(max(0, atto) / 1_000_000_000_000)
    }

    func run() async throws -> FaultResult {
        SwiftMoQElements.register()
        var swiftRelay: TestRelay?
        var rustRelay: RustRelay?
        let port: UInt16
        let fingerprint: String
        switch fault.relay {
        case .swift:
            let relay = try TestRelay.start(
                logger: ProcessInfo.processInfo.environment["SWIFTMOQ_FAULTS_RELAY_LOG"] != nil
                    ? .standardError(level: .debug, label: "relay") : .silent)
            (port, fingerprint) = (relay.port, relay.fingerprint)
            swiftRelay = relay
        case .rust:
            let relay = try await RustRelay.start()
            (port, fingerprint) = (relay.port, relay.fingerprint)
            rustRelay = relay
        }
        let publishProxy = try UDPProxy.start(forwardingTo: port, seed: fault.seed)
        let playProxy = try UDPProxy.start(forwardingTo: port, seed: fault.seed &+ 1)
        publishProxy.impair(fault.publishLeg)
        playProxy.impair(fault.playLeg)
        let broadcast = "faults/\(UInt32.random(in: 0...UInt32.max))"
        func endpoint(_ proxy: UDPProxy) -> String {
            "url=moql://127.0.0.1:\(proxy.port)/anon broadcast=\(broadcast) tls-fingerprint=\(fingerprint)"
        }
        let source =
            "videotestsrc is-live=true pattern=\(fault.pattern) "
            + "! video/x-raw,format=I420,width=640,height=360,framerate=30/1 "
        var video =
            source + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 bitrate=\(fault.videoKbps) "
            + "! h264parse ! video/x-h264,stream-format=avc,alignment=au ! moq.sink_0 "
        if !fault.ladderKbps.isEmpty {
            // A ladder: rungs on pads 3, 4…; the grid at 1 s as key-int-max=15 was.
            video = source + "! tee name=ladder "
            for (i, kbps) in fault.ladderKbps.enumerated() {
                let width = 640 - 160 * i
                let height = width * 9 / 16
                video +=
                    "ladder. ! queue ! videoscale ! video/x-raw,width=\(width),height=\(height) "
                    + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=300 vbv-buf-capacity=500 "
                    + "bitrate=\(kbps) ! h264parse ! video/x-h264,stream-format=avc,alignment=au ! moq.sink_\(i == 0 ? 0 : 2 + i) "
            }
        }
        let publisher = Pipeline(
            launch: video
                + "moqsink name=moq \(endpoint(publishProxy)) sink_2::track=\(DataTrackProbe.track) keyframe-interval=1000 "
                + "audiotestsrc is-live=true wave=sine ! audio/x-raw,rate=48000,channels=2 ! opusenc ! moq.sink_1 "
                + DataTrackProbe.publisherBranch(pad: "sink_2"))
        let player = Pipeline(
            launch: "moqsrc name=src \(endpoint(playProxy)) latency-mode=fixed latency=\(fault.latencyMs) "
                + "src.video_0 ! queue ! appsink name=video sync=true "
                + "src.audio_0 ! queue ! fakesink sync=true")
        let probe = LatencyProbe()
        let rendered = Lock<[Rendered]>([])

        let playerStart = LatencyProbe.now
        try player.start()
        let data = DataTrackProbe(reader: fault.dataReader)
        let stopReader = try await data.read(
            url: "moql://127.0.0.1:\(playProxy.port)/anon", fingerprint: fingerprint, broadcast: broadcast)
        try publisher.start(.paused)
        try probe.attachPublisher(to: publisher, element: "moq", pad: "sink_0")
        try publisher.setState(.playing)
        let sender = data.send(into: try AppSource(publisher, name: "data"))
        let sink = try AppSink(player, name: "video")
        let collector = Task {
            while !Task.isCancelled {
                var got = false
                while let sample = sink.tryPull() {
                    got = true
                    guard let t = sample.publisherTime, let index = sample.frameIndex(every: .nanoseconds(Self.frameNs))
                    else { continue }
                    let entry = Rendered(arrival: LatencyProbe.now, index: index, micros: Self.micros(t))
                    rendered.withLock { $0.append(entry) }
                }
                if !got { try? await Task.sleep(for: .milliseconds(2)) }
            }
        }

        try await Task.sleep(for: Self.warmUp)
        let windowStart = LatencyProbe.now
        let verbose = ProcessInfo.processInfo.environment["SWIFTMOQ_FAULTS_VERBOSE"] != nil
        // Verbose: when each element's status changes (ms after the window starts).
        let statusWatch = Task {
            guard verbose else { return }
            var last: [String: String] = [:]
            while !Task.isCancelled {
                for (label, p, e) in [("publisher", publisher, "moq"), ("player", player, "src")] {
                    let status = (try? p.element(named: e).property("stats"))??.structureValue?["status"]?.stringValue
                    if let status, status != last[label] {
                        last[label] = status
                        print(
                            "FAULTS status \(label) \(status) at \(Int64(bitPattern: LatencyProbe.now &- windowStart) / 1_000_000) ms"
                        )
                    }
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let startPosition = publisher.runningTime ?? .zero
        var returned: (at: UInt64, position: Duration)?
        switch fault.event {
        case .steady:
            try await Task.sleep(for: fault.window)
        case .playLegChanges(let changes):
            var elapsed = Duration.zero
            for change in changes {
                try await Task.sleep(for: change.after - elapsed)
                elapsed = change.after
                playProxy.impair(change.impairment)
            }
            try await Task.sleep(for: fault.window - elapsed)
        case .rebind:
            publishProxy.rebind()
            playProxy.rebind()
            try await Task.sleep(for: fault.window)
        case .blackhole(let outage):
            publishProxy.blackhole()
            playProxy.blackhole()
            try await Task.sleep(for: outage)
            publishProxy.impair(fault.publishLeg)
            playProxy.impair(fault.playLeg)
            returned = (LatencyProbe.now, publisher.runningTime ?? .zero)
            try await Task.sleep(for: fault.window - outage)
        case .relayRestart(let down):
            await swiftRelay?.stop()
            try await Task.sleep(for: down)
            try await swiftRelay?.restart()
            returned = (LatencyProbe.now, publisher.runningTime ?? .zero)
            try await Task.sleep(for: fault.window - down)
        }
        let endPosition = publisher.runningTime ?? .zero
        let windowEnd = LatencyProbe.now
        data.stop()
        await sender.value
        try await Task.sleep(for: Self.drainAfter)
        await stopReader()
        let delivery = data.delivery(from: windowStart, to: windowEnd)
        collector.cancel()
        statusWatch.cancel()
        _ = await collector.value

        let stats = { (p: Pipeline, e: String) -> Int in
            Int((try? p.element(named: e).property("stats"))??.structureValue?["reconnects"]?.intValue ?? -1)
        }
        let publisherReconnects = stats(publisher, "moq")
        let playerReconnects = stats(player, "src")
        let errors = (publisher.collectedMessages + player.collectedMessages).filter(\.isError)
        if verbose {
            for (label, p, e) in [("publisher", publisher, "moq"), ("player", player, "src")] {
                print(
                    "FAULTS \(label) stats: \((try? p.element(named: e).property("stats")).flatMap { $0 }.map { "\($0)" } ?? "-")"
                )
                for m in p.collectedMessages where m.isWarning || m.isError { print("FAULTS \(label): \(m)") }
            }
            let r = rendered.withLock { $0 }
            let trace = r.enumerated().filter { $0.offset % 5 == 0 }.map {
                "\(Int64(bitPattern: $0.element.arrival &- windowStart) / 1_000_000):\($0.element.index)"
            }
            print("FAULTS trace (ms after window start : frame index): \(trace.joined(separator: " "))")
            print(
                "FAULTS rendered \(r.count), first index \(r.first?.index ?? -1), last index \(r.last?.index ?? -1), window \(Self.index(startPosition))...\(Self.index(endPosition))"
            )
        }
        player.stop()
        publisher.stop()
        publishProxy.stop()
        playProxy.stop()
        await swiftRelay?.stop()
        await rustRelay?.stopAndWait()

        let all = rendered.withLock { $0 }
        let first = Self.index(startPosition)
        let last = Self.index(endPosition)
        let expected = max(1, last - first + 1)
        let inWindow = all.filter { $0.index >= first && $0.index <= last }
        let played = Set(inWindow.map(\.index)).count
        for r in inWindow { probe.received(key: r.micros, at: r.arrival) }
        let report = probe.report

        // Stalls: pauses in rendering, from the window's start to its last expected frame.
        let arrivals = all.map(\.arrival).filter { $0 >= windowStart }.sorted()
        var stalls = 0
        var stalledNs: UInt64 = 0
        let windowNs = UInt64(expected) * UInt64(Self.frameNs)
        var previous = windowStart
        for a in arrivals + [windowStart + windowNs] {
            if a > previous, a - previous > 100_000_000 {
                stalls += 1
                stalledNs += a - previous - UInt64(Self.frameNs)
            }
            previous = max(previous, a)
        }
        var recoveryMs: Double?
        if let returned {
            let after = Self.index(returned.position)
            if let firstBack = all.first(where: { $0.index > after && $0.arrival >= returned.at }) {
                recoveryMs = Double(firstBack.arrival - returned.at) / 1e6
            }
        }
        let ms = { (d: Duration?) -> Double? in
            d.map { Double($0.components.seconds) * 1000 + Double($0.components.attoseconds) / 1e15 }
        }
        return FaultResult(
            name: fault.name, relay: fault.relay.rawValue, target: fault.target, framesPublished: expected,
            framesPlayed: played, renderedPercent: 100 * Double(played) / Double(expected), stalls: stalls,
            stallRatioPercent: min(100, 100 * Double(stalledNs) / Double(windowNs)), latencyP50Ms: ms(report.p50),
            latencyP99Ms: ms(report.p99), recoveryMs: recoveryMs,
            timeToFirstFrameMs: all.first.map { Double($0.arrival &- playerStart) / 1e6 },
            publisherReconnects: publisherReconnects, playerReconnects: playerReconnects, errors: errors.count,
            firstError: errors.first.map { "\($0)" }, rssMB: Double(residentBytes()) / 1_048_576,
            proxyDrops: publishProxy.statistics.dropped + playProxy.statistics.dropped,
            dataReader: fault.dataReader.rawValue, dataSent: delivery.sent, dataDelivered: delivery.delivered,
            dataRepeated: delivery.repeated)
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline
import MoqSync
import MoqTestKit

/// `moqbench ladder`: adaptive bitrate against fixed renditions, through one changing cap. In one
/// process: moqsink publishes a ladder (one live picture, one x264 encoder per rung after a tee,
/// keyframes aligned, and Opus), a relay, and one UDP proxy per player whose rate cap follows the
/// same schedule on every leg at once. moqsrc plays at its defaults (adaptive bitrate on) into
/// `decodebin ! appsink sync=true` and an audio appsink on the clock. The other legs are for
/// moq-dev's subscriber (`moqpeer.py watch --video-track`, started by `make bench` on `ready`),
/// each reading one rendition whatever the path carries.
///
/// Events: ready {urls [], fingerprint, broadcast, tracks [], publisher_base_ns}, phase {at_ns,
/// kbps}, result {video_ns [], video_pts_us [], widths [], audio_pts_us [], switches_up,
/// switches_down, rung_ns [], rung_names [], start_ns, end_ns}.
enum LadderRole {
    static let usage = """
        usage: moqbench ladder [options]

          --kbps LIST        the ladder's bitrates, highest first (default 3500,1200,400)
          --caps LIST        the players' path: kbit/s per phase (default 6000,1500,6000)
          --phase-s LIST     how long each phase lasts (default 8,12,12)
          --queue-kb N       the bottleneck's queue (default 100)
          --legs N           legs for other players, capped alike (default 2)
          --lead-s S         time given to the other players to start before the first phase (default 6)
        """

    private static let known: Set<String> = ["kbps", "caps", "phase-s", "queue-kb", "legs", "lead-s"]

    /// The rungs' pictures, highest first (as the fault matrix's ladder).
    static let sizes = [(640, 360), (480, 270), (320, 180)]

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let kbps = try list(options.value("kbps") ?? "3500,1200,400", "--kbps")
        let caps = try list(options.value("caps") ?? "6000,1500,6000", "--caps")
        let phases = (options.value("phase-s") ?? "8,12,12").split(separator: ",").compactMap { Double($0) }
        guard kbps.count >= 2, kbps.count <= sizes.count else { throw .usage("--kbps: 2 or 3 bitrates") }
        guard phases.count == caps.count, phases.allSatisfy({ $0 > 0 }) else {
            throw .usage("--phase-s: one duration per --caps entry")
        }
        let queueBytes = try options.integer("queue-kb", default: 100) * 1024
        let legs = try options.integer("legs", default: 2)
        let leadS = try options.double("lead-s", default: 6)
        SwiftMoQElements.register()
        do {
            try await measure(
                kbps: kbps, caps: caps, phases: phases, queueBytes: queueBytes, legs: max(0, legs), leadS: leadS)
        } catch let error as BenchError {
            throw error
        } catch {
            throw .runtime("ladder: \(error)")
        }
    }

    private static func list(_ text: String, _ option: String) throws(BenchError) -> [Int] {
        let values = text.split(separator: ",").compactMap { Int($0) }
        guard !values.isEmpty, values.allSatisfy({ $0 > 0 }) else { throw .usage("\(option): kbit/s, e.g. 1200,400") }
        return values
    }

    private static func measure(
        kbps: [Int], caps: [Int], phases: [Double], queueBytes: Int, legs: Int, leadS: Double
    ) async throws {
        let relay = try TestRelay.start()
        let proxies = try (0...legs).map { i in try UDPProxy.start(forwardingTo: relay.port, seed: UInt64(i + 1)) }
        defer { for proxy in proxies { proxy.stop() } }
        let broadcast = "bench/ladder-\(UInt32.random(in: 0...UInt32.max))"
        let tracks = kbps.map { "v\($0)" }
        var launch = "moqsink name=moq \(relay.moqsinkProperties(broadcast: broadcast)) keyframe-interval=1000 "
        for (i, track) in tracks.enumerated() { launch += "sink_\(i)::track=\(track) " }
        launch += "sink_\(tracks.count)::track=audio "
        // Snow does not compress: every encoder spends its whole bitrate.
        launch +=
            "videotestsrc is-live=true pattern=snow ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 "
        launch += "! tee name=t "
        for (i, rate) in kbps.enumerated() {
            let (w, h) = sizes[i]
            launch +=
                "t. ! queue ! videoscale ! video/x-raw,width=\(w),height=\(h) "
                + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=1000 bitrate=\(rate) "
                + "! h264parse ! video/x-h264,stream-format=avc,alignment=au ! moq.sink_\(i) "
        }
        launch +=
            "audiotestsrc is-live=true wave=sine samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=2 "
            + "! opusenc ! moq.sink_\(tracks.count)"
        let publisher = Pipeline(launch: launch)
        try publisher.start()
        defer { publisher.stop() }
        try await publisher.waitForState(.playing)
        guard let running = publisher.runningTime else { throw BenchError.runtime("the publisher has no clock") }
        let publisherBase = Monotonic.now() - UInt64(running.nanoseconds)
        try await Task.sleep(for: .seconds(2))
        let uncapped = Impairment.rate(bitsPerSecond: caps[0] * 1000, queueBytes: queueBytes)
        for proxy in proxies { proxy.impair(uncapped) }
        Events.emit(
            "ready",
            fields: [
                ("urls", .strings(proxies.dropFirst().map { relay.url(via: $0) })),
                ("fingerprint", .string(relay.fingerprint)), ("broadcast", .string(broadcast)),
                ("tracks", .strings(tracks)), ("publisher_base_ns", .int(Int(clamping: publisherBase))),
            ])
        try await Task.sleep(for: .seconds(leadS))

        let player = Pipeline(
            launch: "moqsrc name=src \(relay.connectionProperties(via: proxies[0])) broadcast=\(broadcast) "
                + "src.video_0 ! queue ! decodebin ! videoconvert ! appsink name=video sync=true "
                + "src.audio_0 ! queue ! appsink name=audio sync=true")
        try player.start()
        defer { player.stop() }
        let watch = Watched()
        let collector = Task { await watch.collect(player) }
        defer { collector.cancel() }
        // The player settles on the uncapped path first.
        try await Task.sleep(for: .seconds(4))
        let start = Monotonic.now()
        for (cap, seconds) in zip(caps, phases) {
            let impairment = Impairment.rate(bitsPerSecond: cap * 1000, queueBytes: queueBytes)
            for proxy in proxies { proxy.impair(impairment) }
            Events.emit("phase", fields: [("at_ns", .int(Int(clamping: Monotonic.now()))), ("kbps", .int(cap))])
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        }
        let end = Monotonic.now()
        collector.cancel()
        _ = await collector.value
        let stats = (try? player.element(named: "src").property("stats"))??.structureValue
        let video = watch.video.withLock { $0 }
        let rungs = watch.rungs.withLock { $0 }
        Events.emit(
            "result",
            fields: [
                ("start_ns", .int(Int(clamping: start))), ("end_ns", .int(Int(clamping: end))),
                ("video_ns", .ints(video.map { Int(clamping: $0.atNs) })),
                ("video_pts_us", .ints(video.map { Int(clamping: $0.publisherUs) })),
                ("widths", .ints(video.map(\.width))),
                ("audio_pts_us", .ints(watch.audio.withLock { $0 }.map { Int(clamping: $0) })),
                ("switches_up", .int(Int(stats?["abr-switches-up"]?.intValue ?? -1))),
                ("switches_down", .int(Int(stats?["abr-switches-down"]?.intValue ?? -1))),
                ("rung_ns", .ints(rungs.map { Int(clamping: $0.atNs) })),
                ("rung_names", .strings(rungs.map(\.track))),
                ("errors", .int(player.collectedMessages.filter(\.isError).count)),
            ])
        await relay.stop()
    }

    /// What the player rendered (video: when, which publisher frame, how wide; audio: which
    /// publisher frames) and which rendition it played when (sampled every 100 ms).
    final class Watched: Sendable {
        struct Frame: Sendable {
            var atNs: UInt64
            var publisherUs: UInt64
            var width: Int
        }
        let video = Lock<[Frame]>([])
        let audio = Lock<[UInt64]>([])
        let rungs = Lock<[(atNs: UInt64, track: String)]>([])

        func collect(_ player: Pipeline) async {
            guard let video = try? AppSink(player, name: "video"), let audio = try? AppSink(player, name: "audio"),
                let src = try? player.element(named: "src")
            else { return }
            var lastStats: UInt64 = 0
            while !Task.isCancelled {
                var got = false
                while let s = video.tryPull() {
                    got = true
                    guard let t = s.publisherTime else { continue }
                    let width = s.caps.flatMap(Self.width(in:)) ?? 0
                    let frame = Frame(atNs: Monotonic.now(), publisherUs: Self.micros(t), width: width)
                    self.video.withLock { $0.append(frame) }
                }
                while let s = audio.tryPull() {
                    got = true
                    if let t = s.publisherTime { self.audio.withLock { $0.append(Self.micros(t)) } }
                }
                let now = Monotonic.now()
                if now >= lastStats + 100_000_000 {
                    lastStats = now
                    let track = (try? src.property("stats"))??.structureValue?["video-track"]?.stringValue
                    if let track {
                        rungs.withLock { list in if list.last?.track != track { list.append((now, track)) } }
                    }
                }
                if !got { try? await Task.sleep(for: .milliseconds(2)) }
            }
        }

        static func micros(_ d: Duration) -> UInt64 {
            let (s, a) = d.components
            return UInt64(clamping: s) &* 1_000_000 &+ UInt64(clamping: a / 1_000_000_000_000)
        }

        static func width(in caps: String) -> Int? {
            guard let range = caps.range(of: "width=(int)") else { return nil }
            return Int(caps[range.upperBound...].prefix { $0.isNumber })
        }
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import MoqKit

/// `swiftmoq demo`: publishes a test pattern and a tone through moqsink and plays them back through
/// moqsrc via a relay, printing a stats line per second (what `make demo` runs).
enum DemoCommand {
    static let usage = """
        usage: swiftmoq demo --url URL [--tls-fingerprint HEX] [--seconds N] [--headless]

        Publishes a test pattern and a tone (Publisher → moqsink), plays them back (Player →
        moqsrc) through the relay at URL, to a window when a display exists (headless otherwise),
        and prints one line per second: frames per second, bitrate, publish-to-render latency
        (p50/p99, measured on one clock), the player's playout delay and drops. Halfway through a
        second viewer joins the running broadcast (at whatever point of its GOP that is). At the end,
        what each viewer experienced: time to the first frame, publish-to-render latency, audio
        frames played per second (50 for 20 ms Opus frames), stalls, frames dropped to catch up.
        Exits 0 when video and audio played throughout.

        \(ClientFlags.help)
          --seconds N               how long to run (default 10)
          --headless                do not open a window
        """

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv, options: ClientFlags.options.union(["seconds"]), flags: ClientFlags.flags.union(["headless"]))
        } catch { throw .usage(error.description) }
        let seconds: Int
        do { seconds = try args.integer("seconds", default: 10) } catch { throw .usage(error.description) }
        let flags = try SessionFlags(args)
        let session = try await flags.connect()
        let path = "demo/\(getpid())"
        let publisher = Publisher()
        do {
            try publisher.addVideoTrack(
                name: "pattern", source: TestPattern(pattern: "ball"),
                config: VideoEncoderConfig(width: 640, height: 360, bitrate: 1_000_000, keyframeInterval: .seconds(1)))
            try publisher.addAudioTrack(name: "tone", source: TestPattern(), config: AudioEncoderConfig(channels: 2))
            try await session.publish(path: path, publisher: publisher)
            try await publisher.start()
        } catch { throw .runtime("publisher: \(error)") }
        let meter = LatencyMeter()
        if let moq = try? publisher.runningPipeline?.element(named: "moq") { meter.attachPublisher(moq, pad: "sink_0") }
        print("[demo] publishing \(path) (test pattern H.264 640x360 + 440 Hz Opus) to \(flags.url)")

        // The player is another application: its own session, so what it plays comes through the
        // relay (a session reads its own broadcasts locally).
        let viewer = try await flags.connect()
        let catalog: Catalog
        do { catalog = try await firstCatalog(viewer, path: path) } catch { throw .runtime("\(error)") }
        let headless = args.has("headless") || (ProcessInfoDisplay.current == nil && getenv("WAYLAND_DISPLAY") == nil)
        let player: Player
        do {
            player = try Player(catalog: catalog, output: headless ? .headless : .window)
            try await player.play()
        } catch { throw .runtime("player: \(error)") }
        if let vout = try? player.runningPipeline?.element(named: "vout") { meter.attachPlayer(vout, pad: "sink") }
        print("[demo] playing it back \(headless ? "headless" : "in a window") through moqsrc")

        var goodSeconds = 0
        var latencies: [Double] = []
        let joinAt = max(2, seconds / 2)
        var joiner: (session: Session, player: Player, meter: LatencyMeter, started: ContinuousClock.Instant)?
        var joinerLatencies: [Double] = []
        for second in 1...max(1, seconds) {
            if second == joinAt, seconds >= 4 {
                // Another viewer comes in while the broadcast runs (mid-GOP, wherever that is).
                if let session = try? await flags.connect(),
                    let catalog = try? await firstCatalog(session, path: path),
                    let player = try? Player(catalog: catalog, output: .headless)
                {
                    let started = ContinuousClock.now
                    try? await player.play()
                    let joinMeter = LatencyMeter()
                    if let moq = try? publisher.runningPipeline?.element(named: "moq") {
                        joinMeter.attachPublisher(moq, pad: "sink_0")
                    }
                    if let vout = try? player.runningPipeline?.element(named: "vout") {
                        joinMeter.attachPlayer(vout, pad: "sink")
                    }
                    joiner = (session, player, joinMeter, started)
                    print("[demo] a second viewer joins the running broadcast")
                }
            }
            if let joiner, let latency = joiner.meter.drain() { joinerLatencies.append(latency.p50) }
            try? await Task.sleep(for: .seconds(1))
            let stats = player.stats
            let sent = publisher.statistics()
            let latency = meter.drain()
            if let latency { latencies.append(latency.p50) }
            let fps = stats.videoFps ?? 0
            if fps > 0 && (stats.audioBitrateKbps ?? 0) > 0 { goodSeconds += 1 }
            print(
                String(
                    format:
                        "[demo] %2ds  video %4.1f fps %6.0f kbit/s  audio %4.0f kbit/s  e2e latency %@  playout %@  dropped %d  sent %@",
                    second, fps, stats.videoBitrateKbps ?? 0, stats.audioBitrateKbps ?? 0,
                    latency.map { String(format: "p50 %.0f ms p99 %.0f ms", $0.p50, $0.p99) } ?? "–",
                    StatusLine.ms(stats.videoLatency), stats.videoFramesDropped + stats.audioFramesDropped,
                    sent.map { StatusLine.rate(Double($0.estimatedSendRateBps)) } ?? "–"))
        }
        let viewers: [(String, PlaybackStats, [Double], Double)] =
            [("viewer from the start", player.stats, latencies, Double(seconds))]
            + (joiner.map {
                [
                    (
                        "viewer who joined at \(joinAt) s", $0.player.stats, joinerLatencies,
                        Double((ContinuousClock.now - $0.started).components.seconds)
                    )
                ]
            } ?? [])
        for (who, stats, samples, played) in viewers {
            print("[demo] \(who): " + experience(stats, latencies: samples, seconds: played))
        }
        if let joiner {
            await joiner.player.stop()
            await joiner.session.close()
        }
        await player.stop()
        publisher.stop()
        for await _ in publisher.state {}
        await viewer.close()
        await session.close()
        let median = latencies.sorted().dropFirst(latencies.count / 2).first
        print(
            "[demo] done: \(goodSeconds)/\(seconds) s with video and audio"
                + (median.map { String(format: ", median publish-to-render latency %.0f ms", $0) } ?? ""))
        guard goodSeconds >= max(1, seconds / 2) else {
            throw .runtime("the demo did not play back video and audio (\(goodSeconds) of \(seconds) s)")
        }
    }

    /// What a viewer experienced, in one line.
    private static func experience(_ stats: PlaybackStats, latencies: [Double], seconds: Double) -> String {
        let first = stats.timeToFirstVideoFrame.map { StatusLine.ms($0) } ?? "–"
        let median = latencies.sorted().dropFirst(latencies.count / 2).first
        let audioStart = stats.timeToFirstAudioFrame.map { Double($0.components.seconds) } ?? 0
        let audioRate = Double(stats.audioFrames) / max(1, seconds - audioStart)
        return String(
            format: "first frame after %@, publish-to-render p50 %@, audio %.1f frames/s (50 expected), %d stalls, "
                + "%d frames dropped to catch up, latency mode %@ (margin %@)",
            first, median.map { String(format: "%.0f ms", $0) } ?? "–", audioRate,
            stats.videoStalls.count + stats.audioStalls.count, stats.catchUpDrops, stats.latencyMode ?? "–",
            StatusLine.ms(stats.latencyMargin))
    }

    /// The broadcast's first catalog with both a playable video and audio track.
    private static func firstCatalog(_ session: Session, path: String) async throws -> Catalog {
        let subscription = try await session.subscribe(prefix: path)
        defer { subscription.cancel() }
        let deadline = ContinuousClock.now + .seconds(15)
        return try await withThrowingTaskGroup(of: Catalog?.self) { group in
            group.addTask {
                for await broadcast in subscription.broadcasts {
                    if let catalog = await broadcast.settledCatalog(timeout: .seconds(15)),
                        !catalog.playableVideoTracks.isEmpty && !catalog.playableAudioTracks.isEmpty
                    {
                        return catalog
                    }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(until: deadline)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else {
                throw CommandError.runtime("the demo broadcast's catalog did not arrive within 15 s")
            }
            return first
        }
    }
}

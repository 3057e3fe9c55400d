// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline
import MoqSync
import MoqTestKit

/// `moqbench join`: what viewers who join a running broadcast at moqsrc's defaults see and hear, in
/// one process so that every stage reads one clock: a live 720p30 source and a sine (Opus, 20 ms
/// frames) published with moqsink, a relay, a UDP proxy on the player's path, and viewers started one
/// after another at random points of the GOP (`moqsrc ! queue ! decodebin ! queue ! fakesink sync=true`
/// for video, `… ! moqtestaudiosink` for audio: a GstAudioBaseSink that measures the sine it renders).
/// For each: glass to glass of every video frame and audio frame rendered, time to the first frame
/// (the live edge), the audio rendered against what was published, breaks and resyncs. Then one
/// viewer through a 1 s blackhole, and one through a 1 s delay spike: glass to glass over the
/// seconds after each (catch-up).
enum JoinRole {
    static let usage = """
        usage: moqbench join [options]

        Events: join {gop_s, phase_ms, ttff_ms, first_ms, video_ms [], audio_ms [], audio_rendered_ms,
        audio_pushed_ms, audio_published_ms, discontinuities, resyncs, silence_gaps, retargets},
        stall {gop_s, kind, stall_s, before_ms, after_s [], glass_ms [], back_s}, result {}.

          --gops LIST           GOP lengths in seconds (default 1,2)
          --joins N             viewers per GOP, each at a random point of it (default 20)
          --watch-s S           how long each viewer plays (default 3)
          --stall-s S           the blackhole on the player's path (default 1; 0: none)
          --spike-s S           a delay spike on the player's path: nothing arrives for S, then
                                everything S late and in order until it has caught up (default 1; 0: none)
          --after-stall-s S     playing time after the blackhole (default 15)
          --width W, --height H picture size (default 1280x720)
          --audio-buffer-ms MS  the viewers' sound card buffer (moqtestaudiosink buffer-time; default 40,
                                a device set up for live use; GStreamer's default is 200)
          --no-audio            viewers play video only (as case 4d): glass to glass without a sound card
          --seed N              the join points' random sequence (default 1)
        """

    private static let known: Set<String> = [
        "gops", "joins", "watch-s", "stall-s", "spike-s", "after-stall-s", "width", "height", "seed", "audio-buffer-ms",
    ]

    struct Settings {
        var joins = 20
        var watchS = 3.0
        var stallS = 1.0
        var spikeS = 1.0
        var afterStallS = 15.0
        var width = 1280
        var height = 720
        /// The viewers' sound card buffer (µs); nil: video only.
        var audioBufferUs: Int? = 40_000
    }

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: ["no-audio"])
        var settings = Settings()
        settings.joins = max(1, try options.integer("joins", default: 20))
        settings.watchS = try options.double("watch-s", default: 3)
        settings.stallS = try options.double("stall-s", default: 1)
        settings.spikeS = try options.double("spike-s", default: 1)
        settings.afterStallS = try options.double("after-stall-s", default: 15)
        settings.width = try options.integer("width", default: 1280)
        settings.height = try options.integer("height", default: 720)
        settings.audioBufferUs =
            options.has("no-audio") ? nil : max(10_000, try options.integer("audio-buffer-ms", default: 40) * 1000)
        var random = SplitMix(seed: UInt64(try options.integer("seed", default: 1)))
        let gops = (options.value("gops") ?? "1,2").split(separator: ",").compactMap { Double($0) }
        guard !gops.isEmpty, gops.allSatisfy({ $0 > 0 }) else { throw .usage("--gops: seconds, e.g. 1,2") }
        SwiftMoQElements.register()
        RenderedAudioSink.register()
        do {
            for gop in gops {
                try await measure(gop: gop, settings: settings, random: &random)
            }
        } catch let error as BenchError {
            throw error
        } catch {
            throw .runtime("join: \(error)")
        }
        Events.emit("result", [:])
    }

    private static func measure(gop: Double, settings: Settings, random: inout SplitMix) async throws {
        let relay = try TestRelay.start()
        let playLeg = try UDPProxy.start(forwardingTo: relay.port, seed: 1)
        defer { playLeg.stop() }
        let broadcast = "bench/join-\(UInt32.random(in: 0...UInt32.max))"
        let frames = max(1, Int(gop * 30))
        let publisher = Pipeline(
            launch: "videotestsrc is-live=true pattern=ball ! "
                + "video/x-raw,format=I420,width=\(settings.width),height=\(settings.height),framerate=30/1 ! "
                + "identity name=captured ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=\(frames) "
                + "option-string=scenecut=0 ! h264parse ! moq.sink_0 "
                + "audiotestsrc is-live=true wave=sine freq=\(ToneTracker.defaultFrequency) samplesperbuffer=960 ! "
                + "audio/x-raw,rate=48000,channels=1 ! identity name=heard ! opusenc ! moq.sink_1 "
                + "moqsink name=moq \(relay.moqsinkProperties(broadcast: broadcast))")
        try publisher.start()
        defer { publisher.stop() }
        try await publisher.waitForState(.playing)
        guard let running = publisher.runningTime else { throw BenchError.runtime("the publisher has no clock") }
        let publisherBase = Monotonic.now() - UInt64(running.nanoseconds)
        // The relay holds a group from its keyframe once one is published.
        try await Task.sleep(for: .milliseconds(Int(gop * 1000) + 1_500))
        let source = "\(relay.connectionProperties(via: playLeg)) broadcast=\(broadcast)"
        for _ in 0..<settings.joins {
            try await Task.sleep(for: .milliseconds(Int(Double.random(in: 0..<gop, using: &random) * 1000) + 200))
            let phase = (publisher.runningTime.map { Double($0.nanoseconds) / 1e6 } ?? 0)
                .truncatingRemainder(dividingBy: gop * 1000)
            let viewing = try await Viewing.play(
                source: source, seconds: settings.watchS, publisherBase: publisherBase,
                audioBufferUs: settings.audioBufferUs)
            Events.emit(
                "join",
                fields: [
                    ("gop_s", .double(gop)), ("phase_ms", .double(phase)),
                    ("audio", .bool(settings.audioBufferUs != nil)),
                ] + viewing.fields)
        }
        for (kind, seconds) in [(StallKind.blackhole, settings.stallS), (.spike, settings.spikeS)] where seconds > 0 {
            try await stall(
                kind, seconds: seconds, gop: gop, settings: settings, source: source, publisherBase: publisherBase,
                playLeg: playLeg, publisher: publisher)
        }
        await relay.stop()
    }

    /// What interrupts a viewer's path.
    enum StallKind: String {
        /// Everything dropped: once the path returns, the relay sends what it holds at once, the
        /// stalled frames render late or are skipped, and the live edge is on time.
        case blackhole
        /// Everything delayed, in order (``Impairment/spike(_:)``): the live edge itself arrives
        /// late, the timeline moves later, and catch-up has to take the delay back.
        case spike
    }

    /// One viewer through a stall on its path, starting 0.2 s after a keyframe: glass to glass of the
    /// video frames before it and over the seconds after, and when it was back within 50 ms of where
    /// it was before.
    private static func stall(
        _ kind: StallKind, seconds: Double, gop: Double, settings: Settings, source: String, publisherBase: UInt64,
        playLeg: UDPProxy, publisher: Pipeline
    ) async throws {
        let total = 4 + gop + seconds + settings.afterStallS
        let restoreAt = Lock<UInt64>(0)
        let gopNs = UInt64(gop * 1e9)
        let viewing = try await Viewing.play(
            source: source, seconds: total, publisherBase: publisherBase, audioBufferUs: settings.audioBufferUs
        ) {
            try? await Task.sleep(for: .seconds(3))
            let running = publisher.runningTime.map { UInt64($0.nanoseconds) } ?? 0
            let phase = running % gopNs
            let untilKeyframe = (gopNs - phase + 200_000_000) % gopNs
            try? await Task.sleep(for: .nanoseconds(untilKeyframe))
            switch kind {
            case .blackhole: playLeg.blackhole()
            case .spike: playLeg.impair(.spike(.milliseconds(Int(seconds * 1000))))
            }
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            playLeg.impair(kind == .spike ? .inOrder : .none)
            restoreAt.withLock { $0 = Monotonic.now() }
        }
        let restored = restoreAt.withLock { $0 }
        let before = viewing.video.filter { $0.renderNs < restored - UInt64(seconds * 1e9) }.map { $0.glassMs }
        let beforeP50 = percentile(before, 0.5)
        let after = viewing.video.filter { $0.renderNs >= restored }
        let afterS = after.map { Double($0.renderNs - restored) / 1e9 }
        // Back: from then on, in every second, 95 % of the frames within 50 ms of the latency before
        // the stall (one frame a sink is late with is no return of the stall's delay).
        var back = Double.nan
        let lastS = afterS.last ?? 0
        var windowStart = 0.0
        while windowStart + 1 <= lastS + 0.001 {
            let settled = stride(from: windowStart, to: lastS, by: 0.5).allSatisfy { w in
                let inWindow = zip(afterS, after).filter { $0.0 >= w && $0.0 < w + 1 }.map { $0.1.glassMs }
                return inWindow.isEmpty || percentile(inWindow, 0.95) <= beforeP50 + 50
            }
            if settled {
                back = windowStart
                break
            }
            windowStart += 0.5
        }
        Events.emit(
            "stall",
            fields: [
                ("gop_s", .double(gop)), ("kind", .string(kind.rawValue)), ("stall_s", .double(seconds)),
                ("before_ms", .double(beforeP50)),
                ("after_s", .doubles(afterS)), ("glass_ms", .doubles(after.map { $0.glassMs })),
                ("back_s", .double(back)),
            ] + viewing.fields.filter { ["catch_up_drops", "discontinuities", "resyncs"].contains($0.0) })
    }

    static func percentile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))]
    }
}

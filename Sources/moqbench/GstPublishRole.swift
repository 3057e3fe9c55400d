// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline
import MoqTestKit

/// `moqbench gst-publish`: `appsrc ! moqsink`, fed a looped pre-encoded 1080p30 H.264 clip in real time.
enum GstPublishRole {
    static let usage = """
        usage: moqbench gst-publish --url URL --tls-fingerprint HEX --broadcast PATH [options]

        Encodes --clip-frames frames with x264enc (ultrafast, zerolatency) into memory, then pushes them
        in a loop through appsrc ! moqsink at --fps, each buffer's PTS the pipeline's running time at
        push. Events: encoded {frames, bytes, kbps, encode_cpu_s, media_s}, ready {base_ns} (the
        pipeline's base time on CLOCK_MONOTONIC: base_ns + running time = publish instant),
        result {pushed, bytes, cpu_s}.

        \(Client.help)
          --broadcast PATH          broadcast to publish (required)
          --seconds S               how long to publish (default 10)
          --width W, --height H     picture size (default 1920x1080)
          --fps N                   frames per second (default 30)
          --bitrate-kbps N          x264enc bitrate (default 4000)
          --clip-frames N           frames encoded and looped (default 60)
          --key-interval N          frames per GOP (default 30)
        """

    private static let known = Client.options.union([
        "broadcast", "seconds", "width", "height", "fps", "bitrate-kbps", "clip-frames", "key-interval",
    ])

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        let seconds = try options.double("seconds", default: 10)
        let fps = max(1, try options.integer("fps", default: 30))
        SwiftMoQElements.register()
        let clip = try await EncodedClip.encode(
            width: try options.integer("width", default: 1920), height: try options.integer("height", default: 1080),
            fps: fps, frames: max(1, try options.integer("clip-frames", default: 60)),
            keyInterval: max(1, try options.integer("key-interval", default: 30)),
            bitrateKbps: try options.integer("bitrate-kbps", default: 4000))
        let mediaSeconds = Double(clip.samples.count) / Double(fps)
        Events.emit(
            "encoded",
            [
                "frames": .int(clip.samples.count), "bytes": .int(clip.bytes),
                "kbps": .double(Double(clip.bytes) * 8 / mediaSeconds / 1000),
                "encode_cpu_s": .double(clip.encodeCPUSeconds), "media_s": .double(mediaSeconds),
            ])

        let pipeline = Pipeline {
            Element("appsrc", name: "src").set("is-live", true).set("format", .nick("time")).set(
                "caps", .string(clip.caps))
            Element("moqsink", name: "moq").set("url", client.url).set("broadcast", path).set(
                "tls-fingerprint", client.fingerprint)
        }
        let source: AppSource
        do {
            try pipeline.start()
            try await pipeline.waitForState(.playing)
            source = try AppSource(pipeline, name: "src")
        } catch {
            throw .runtime("publisher pipeline: \(error)")
        }
        guard let running = pipeline.runningTime else { throw .runtime("the publisher pipeline has no clock") }
        Events.emit("ready", ["base_ns": .int(Int(Monotonic.now()) - Int(running.nanoseconds))])

        let total = Int(seconds * Double(fps))
        let pushed = await onDedicatedThread(name: "push") {
            push(clip, count: total, fps: fps, into: source, pipeline: pipeline)
        }
        try? source.endOfStream()
        try? await pipeline.waitForEOS(timeout: .seconds(10))
        Events.emit(
            "result",
            [
                "pushed": .int(pushed.frames), "bytes": .int(pushed.bytes),
                "cpu_s": .double(Monotonic.processCPUSeconds()),
            ])
        pipeline.stop()
    }

    /// Pushes `count` access units in real time, looping the clip; returns what was pushed.
    private static func push(_ clip: EncodedClip, count: Int, fps: Int, into source: AppSource, pipeline: Pipeline)
        -> (frames: Int, bytes: Int)
    {
        let interval = UInt64(1_000_000_000 / fps)
        let start = Monotonic.now()
        var bytes = 0
        for i in 0..<count {
            Monotonic.sleep(until: start + UInt64(i) * interval)
            guard let now = pipeline.runningTime else { return (i, bytes) }
            var sample = clip.samples[i % clip.samples.count]
            sample.pts = now
            sample.dts = now
            sample.duration = .nanoseconds(Int64(interval))
            sample.caps = nil
            do { try source.push(sample) } catch { return (i, bytes) }
            bytes += sample.bytes.count
        }
        return (count, bytes)
    }
}

extension Duration {
    /// The whole duration in ns.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

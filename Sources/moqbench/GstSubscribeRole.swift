// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline

/// `moqbench gst-subscribe`: `moqsrc latency=0 ! appsink sync=false`, timing each buffer against the
/// publisher-time reference meta.
enum GstSubscribeRole {
    static let usage = """
        usage: moqbench gst-subscribe --url URL --tls-fingerprint HEX --broadcast PATH --publisher-base-ns NS [options]

        Plays the broadcast's video into an appsink (no decoding, no clock sync), waits for the first
        buffer, lets --warmup-s pass, then measures for --seconds. Events: first_frame, measuring {ns},
        result {frames, latencies_us, cpu_s}.

        \(Client.help)
          --broadcast PATH          broadcast to play (required)
          --publisher-base-ns NS    the publisher pipeline's base time (its ready event) (required)
          --seconds S               measuring time (default 10)
          --warmup-s S              time after the first buffer before measuring (default 1)
        """

    private static let known = Client.options.union(["broadcast", "publisher-base-ns", "seconds", "warmup-s"])

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        guard let base = UInt64(try options.required("publisher-base-ns")) else {
            throw .usage("--publisher-base-ns must be a number of ns")
        }
        let seconds = try options.double("seconds", default: 10)
        let warmup = try options.double("warmup-s", default: 1)
        SwiftMoQElements.register()
        let pipeline = Pipeline {
            Element("moqsrc", name: "src").set("url", client.url).set("broadcast", path).set(
                "tls-fingerprint", client.fingerprint
            ).set("latency", 0)
            Branch {
                From("src", pad: "video_0")
                Element("appsink", name: "sink").set("sync", false).set("max-buffers", 4).set("drop", true)
            }
        }
        let probe = PublisherTimeProbe(publisherBase: base)
        do {
            try pipeline.start()
            try probe.attach(to: try pipeline.element(named: "sink"), pad: "sink")
        } catch let error as BenchError {
            throw error
        } catch {
            throw .runtime("subscriber pipeline: \(error)")
        }
        let waitUntil = ContinuousClock.now + .seconds(30)
        while probe.frames == 0 {
            if ContinuousClock.now > waitUntil { throw .runtime("no video buffer within 30 s") }
            if let failure = pipeline.collectedMessages.first(where: \.isError) {
                throw .runtime("subscriber pipeline: \(failure)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        Events.emit("first_frame", ["ns": .int(Int(Monotonic.now()))])
        try? await Task.sleep(for: .milliseconds(Int64(warmup * 1000)))
        probe.startMeasuring()
        Events.emit("measuring", ["ns": .int(Int(Monotonic.now()))])
        try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        let latencies = probe.latenciesMicros
        Events.emit(
            "result",
            [
                "frames": .int(latencies.count), "latencies_us": .ints(latencies),
                "cpu_s": .double(Monotonic.processCPUSeconds()), "ns": .int(Int(Monotonic.now())),
            ])
        pipeline.stop()
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline
import MoqTestKit

/// `moqbench ttff`: time to first frame, as a viewer meets it: from starting a player pipeline at
/// default settings (`moqsrc ! decodebin ! appsink sync=true`: connect, announce, catalog,
/// subscribe, the first keyframe, decode, render at its running time) to the first decoded frame
/// rendered. A fresh pipeline and connection each run.
enum TimeToFirstFrameRole {
    static let usage = """
        usage: moqbench ttff --url URL --tls-fingerprint HEX --broadcast PATH [options]

        Starts `moqsrc ! decodebin ! appsink sync=true` --runs times, each time a new pipeline and
        connection, and times start → first decoded frame rendered. Events: run {ms, element_ms}
        (element_ms: moqsrc's own time to its first video buffer, from its stats), result {ms, element_ms}.

        \(Client.help)
          --broadcast PATH          broadcast to play (required)
          --runs N                  players started one after another (default 10)
          --pause-ms MS             pause between runs (default 300)
        """

    private static let known = Client.options.union(["broadcast", "runs", "pause-ms"])

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        let runs = max(1, try options.integer("runs", default: 10))
        let pause = max(0, try options.integer("pause-ms", default: 300))
        SwiftMoQElements.register()
        var times: [Double] = []
        var elementTimes: [Double] = []
        for _ in 0..<runs {
            let pipeline = Pipeline {
                Element("moqsrc", name: "src").set("url", client.url).set("broadcast", path).set(
                    "tls-fingerprint", client.fingerprint)
                Branch {
                    From("src", pad: "video_0")
                    Element("decodebin")
                    Element("appsink", name: "sink").set("sync", true).set("max-buffers", 2).set("drop", true)
                }
            }
            let started = ContinuousClock.now
            let sink: AppSink
            do {
                try pipeline.start()
                sink = try AppSink(pipeline, name: "sink")
            } catch {
                throw .runtime("player pipeline: \(error)")
            }
            let first: Sample?
            do { first = try await sink.pull(timeout: .seconds(20)) } catch { throw .runtime("player: \(error)") }
            guard first != nil else {
                let failure = pipeline.collectedMessages.first(where: \.isError).map { "\($0)" } ?? "no frame"
                throw .runtime("no frame rendered within 20 s: \(failure)")
            }
            let elapsed = ContinuousClock.now - started
            let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            let stats = try? pipeline.element(named: "src").property("stats")?.structureValue
            let element = stats?["time-to-first-video-frame-ms"]?.doubleValue ?? .nan
            times.append(ms)
            elementTimes.append(element)
            Events.emit("run", ["ms": .double(ms), "element_ms": .double(element)])
            pipeline.stop()
            try? await Task.sleep(for: .milliseconds(pause))
        }
        Events.emit("result", ["ms": .doubles(times), "element_ms": .doubles(elementTimes)])
    }
}

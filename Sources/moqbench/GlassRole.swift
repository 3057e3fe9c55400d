// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import GstSwiftMoQ
import MoqCommandLine
import MoqPipeline

/// `moqbench glass`: glass-to-glass latency at a player's default settings, in one process so that
/// every stage reads the same clock: a live 1080p30 test source with a running clock overlay →
/// x264enc zerolatency → moqsink → the relay → moqsrc → decodebin → a synchronised sink, and where
/// each frame spent its time (source, encoder, transport, decoder, the player's jitter buffer and
/// render wait).
enum GlassRole {
    static let usage = """
        usage: moqbench glass --url URL --tls-fingerprint HEX --broadcast PATH [options]

        Publishes `videotestsrc is-live=true ! timeoverlay ! x264enc tune=zerolatency ! moqsink` and
        plays it with `moqsrc ! queue ! decodebin ! queue ! fakesink sync=true` in this process, then times each frame
        from capture to render. Events: result {frames, latency_ms, stages {source, encode, transport,
        decode, render_wait: [ms]}, player_latency_ms}.

        \(Client.help)
          --broadcast PATH          broadcast to publish and play (required)
          --seconds S               measuring time (default 10)
          --warmup-s S              time after the first frame before measuring (default 2)
          --width W, --height H     picture size (default 1920x1080)
          --fps N                   frames per second (default 30)
          --latency MS              moqsrc's latency (default: the element's own default)
          --latency-mode MODE       moqsrc's latency-mode, adaptive or fixed (default: the element's own)
        """

    private static let known = Client.options.union([
        "broadcast", "seconds", "warmup-s", "width", "height", "fps", "latency", "latency-mode",
    ])

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        let seconds = try options.double("seconds", default: 10)
        let warmup = try options.double("warmup-s", default: 2)
        let fps = max(1, try options.integer("fps", default: 30))
        let latency = options.value("latency").flatMap(Int.init)
        let width = try options.integer("width", default: 1920)
        let height = try options.integer("height", default: 1080)
        SwiftMoQElements.register()
        let publisher = Pipeline {
            Element("videotestsrc").set("is-live", true).set("pattern", "ball")
            Caps(
                "video/x-raw",
                ["format": "I420", "width": width, "height": height, "framerate": Fraction(Int32(clamping: fps), 1)])
            Element("timeoverlay").set("font-desc", "Sans 36")
            Element("identity", name: "captured")
            Element("x264enc").set("tune", "zerolatency").set("speed-preset", "ultrafast").set("key-int-max", fps)
            Element("identity", name: "encoded")
            Element("h264parse")
            Element("moqsink").set("url", client.url).set("broadcast", path).set("tls-fingerprint", client.fingerprint)
        }
        var source = Element("moqsrc", name: "src").set("url", client.url).set("broadcast", path).set(
            "tls-fingerprint", client.fingerprint)
        if let latency { source = source.set("latency", latency) }
        if let mode = options.value("latency-mode") { source = source.set("latency-mode", mode) }
        let player = Pipeline(
            nodes: source.nodes
                + Branch {
                    From("src", pad: "video_0")
                    Element("identity", name: "received")
                    // As in the README's pipelines: the decoder on a thread of its own, so that moqsrc's
                    // pushes (and the `received` times) do not wait for the sink's clock.
                    Element("queue")
                    Element("decodebin")
                    Element("identity", name: "decoded")
                    // And the sink on its own: a frame waiting for its render time holds no decoder.
                    Element("queue")
                    Element("fakesink", name: "display").set("sync", true)
                }.nodes)
        let captured = StageProbe(key: .runningTime)
        let encoded = StageProbe(key: .runningTime)
        let received = StageProbe(key: .publisherMeta)
        let decoded = StageProbe(key: .publisherMeta)
        let publisherBase: UInt64
        do {
            try publisher.start()
            try await publisher.waitForState(.playing)
            try captured.attach(to: try publisher.element(named: "captured"))
            try encoded.attach(to: try publisher.element(named: "encoded"))
            guard let running = publisher.runningTime else { throw BenchError.runtime("the publisher has no clock") }
            publisherBase = Monotonic.now() - UInt64(running.nanoseconds)
            try player.start()
            try received.attach(to: try player.element(named: "received"))
        } catch let error as BenchError {
            throw error
        } catch {
            throw .runtime("pipelines: \(error)")
        }
        // decodebin links `decoded` once the caps are known: probe it when it exists.
        let deadline = ContinuousClock.now + .seconds(30)
        while decoded.keys.isEmpty {
            if ContinuousClock.now > deadline { throw .runtime("no decoded frame within 30 s") }
            if let failure = (player.collectedMessages + publisher.collectedMessages).first(where: \.isError) {
                throw .runtime("\(failure)")
            }
            if (try? player.element(named: "decoded")).map({ e in
                (try? decoded.attach(to: e)) != nil
            }) == true {
                break
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        try? await Task.sleep(for: .milliseconds(Int64(warmup * 1000)))
        let from = Monotonic.now()
        try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        let until = Monotonic.now()
        guard let playerRunning = player.runningTime else { throw .runtime("the player has no clock") }
        let playerBase = Monotonic.now() - UInt64(playerRunning.nanoseconds)
        let playerLatency = try pipelineLatency(player)
        let stats = try? player.element(named: "src").property("stats")?.structureValue
        let margin = stats?["latency-margin-ms"]?.doubleValue ?? 0
        let retargets = Int(stats?["retargets"]?.intValue ?? 0)
        player.stop()
        publisher.stop()

        var stages: [String: [Double]] = ["source": [], "encode": [], "transport": [], "decode": [], "render_wait": []]
        var totals: [Double] = []
        func ms(_ ns: UInt64, _ since: UInt64) -> Double { Double(Int64(bitPattern: ns &- since)) / 1e6 }
        for key in decoded.keys.sorted() {
            guard let c = captured.time(of: key), let e = encoded.time(of: key), let r = received.time(of: key),
                let d = decoded.time(of: key), let pts = decoded.pts(of: key), c >= from, c <= until
            else { continue }
            let capture = publisherBase + key * 1000
            // A synchronised sink renders at the buffer's running time plus the pipeline latency, or
            // at once when the buffer arrives later than that.
            let render = max(d, playerBase + pts + playerLatency)
            stages["source"]!.append(ms(c, capture))
            stages["encode"]!.append(ms(e, c))
            stages["transport"]!.append(ms(r, e))
            stages["decode"]!.append(ms(d, r))
            stages["render_wait"]!.append(ms(render, d))
            totals.append(ms(render, capture))
        }
        Events.emit(
            "result",
            fields: [
                ("frames", .int(totals.count)), ("latency_ms", .doubles(totals)),
                ("player_latency_ms", .double(Double(playerLatency) / 1e6)),
                ("margin_ms", .double(margin)), ("retargets", .int(retargets)),
            ] + stages.sorted { $0.key < $1.key }.map { ("stage_\($0.key)", .doubles($0.value)) })
    }

    /// The latency the player's sink waits (the LATENCY query's minimum), in ns.
    private static func pipelineLatency(_ pipeline: Pipeline) throws(BenchError) -> UInt64 {
        guard let sink = try? pipeline.element(named: "display"), let query = gst_query_new_latency() else {
            throw .runtime("cannot query the player's latency")
        }
        defer { gst_query_unref(query) }
        guard gst_element_query(sink.object.pointer, query) != 0 else { throw .runtime("the latency query failed") }
        var live: gboolean = 0
        var minimum: GstClockTime = 0
        var maximum: GstClockTime = 0
        gst_query_parse_latency(query, &live, &minimum, &maximum)
        return UInt64(minimum)
    }
}

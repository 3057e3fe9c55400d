// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqPipeline
import MoqTestKit
import SwiftMoQ
import Testing

/// The plugin file as built next to the tests, in a directory of its own (GStreamer
/// scans directories), with a private registry.
enum PluginFile {
    static let directory: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-plugin-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let built = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("libgstswiftmoq.so")
        let root = (try? RustPeer.packageRoot()) ?? URL(fileURLWithPath: ".")
        let candidates = [built, root.appendingPathComponent(".build/debug/libgstswiftmoq.so")]
        if let source = candidates.first(where: { FileManager.default.fileExists(atPath: $0.path) }) {
            try? FileManager.default.removeItem(at: dir.appendingPathComponent("libgstswiftmoq.so"))
            try? FileManager.default.copyItem(at: source, to: dir.appendingPathComponent("libgstswiftmoq.so"))
        }
        return dir
    }()

    /// Runs `gst-launch-1.0 -e <description>` with the plugin.
    static func launch(_ description: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        process.arguments = ["-e"] + description.split(separator: " ").map(String.init)
        var env = ProcessInfo.processInfo.environment
        env["GST_PLUGIN_PATH"] = directory.path
        env["GST_REGISTRY_1_0"] = directory.appendingPathComponent("registry.bin").path
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}

@Suite("moqsink end to end", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct MoqSinkTests {
    static let video = "videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
    static let h264 =
        "x264enc tune=zerolatency key-int-max=30 ! video/x-h264,profile=constrained-baseline ! h264parse ! video/x-h264,stream-format=avc"

    @Test("gst-launch: videotestsrc ! x264enc ! moqsink + opusenc → Rust relay → Rust decoder: ≥ 95 % of frames")
    func gstLaunchToRustDecoder() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("gst")
        let watcher = try RustPeer.launch(
            ["watch"] + relay.client + ["--broadcast", name, "--seconds", "16", "--frames", "240"])
        defer { watcher.terminateInBackground() }
        // The video is one 8 s group: however late the watcher's subscription reaches the relay
        // (seconds, on a freshly set-up CI machine), the relay serves the group from its start.
        // Audio is a group per frame: a late start loses its first packets, so 75 % of them.
        let gst = try PluginFile.launch(
            "moqsink name=m url=\(relay.url()) broadcast=\(name) tls-fingerprint=\(relay.fingerprint) "
                + "videotestsrc num-buffers=240 is-live=true ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! "
                + "x264enc tune=zerolatency key-int-max=240 ! video/x-h264,profile=constrained-baseline ! h264parse ! "
                + "video/x-h264,stream-format=avc ! m.sink_0 "
                + "audiotestsrc num-buffers=400 is-live=true ! audio/x-raw,rate=48000,channels=2 ! opusenc ! m.sink_1")
        defer { if gst.isRunning { gst.terminate() } }
        let catalog = try await watcher.waitFor(event: "catalog", timeout: .seconds(30))
        let summary = try await watcher.waitFor(event: "summary", timeout: .seconds(40))
        #expect((summary.int("video_frames") ?? 0) >= 228, "\(summary)")  // 95 % of 240
        #expect((summary.int("audio_frames") ?? 0) >= 300, "\(summary)")  // 75 % of 8 s of 20 ms packets
        #expect(summary.int("errors") == 0)
        // The catalog parsed on the Rust side, with our codec strings.
        #expect(catalog.line.contains("\"0.avc1\"") && catalog.line.contains("\"1.opus\""), "\(catalog)")
        let launched = Handed(gst)
        try await offThePool { launched.value.waitUntilExit() }
        #expect(gst.terminationStatus == 0)
    }

    @Test("the relay killed and restarted mid-stream: publishing resumes, WARNING not ERROR")
    func relayRestart() async throws {
        let port = try freeUDPPort()
        var relay = try await RustRelay.start(["--port", "\(port)"])
        let name = RustPeer.uniqueName("restart")
        // The restarted relay has a new self-signed certificate: verification is off here.
        let pipeline = try TestPipeline(
            "moqsink name=m url=moql://127.0.0.1:\(port)/anon broadcast=\(name) tls-disable-verify=true "
                + "\(Self.video) ! \(Self.h264) ! m.sink_0")
        #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
        let sink = pipeline.element("m")!
        defer { gst_object_unref(sink) }
        try await eventually("connected") { stringProperty(sink, "status") == "connected" }

        await relay.stopAndWait()
        try await pipeline.waitFor(.seconds(30)) { $0.isWarning && $0.text?.contains("retrying") == true }
        #expect(["reconnecting", "connecting"].contains(stringProperty(sink, "status")))

        relay = try await RustRelay.start(["--port", "\(port)"])
        defer { relay.stop() }
        try await eventually("reconnected", timeout: .seconds(20)) { stringProperty(sink, "status") == "connected" }
        let subscriber = try RustPeer.launch(
            ["subscribe"] + relay.client + [
                "--broadcast", name, "--track", "0.avc1", "--count", "10", "--max-latency-ms", "3000",
            ])
        defer { subscriber.terminateInBackground() }
        #expect(try await subscriber.waitForExit(timeout: .seconds(30)) == 0, "\(subscriber.stderr)")
        #expect(pipeline.errors.isEmpty, "\(pipeline.errors)")
        #expect(
            stringProperty(sink, "stats")?.contains("reconnects=(guint64)1") == true,
            "\(stringProperty(sink, "stats") ?? "")")
        pipeline.setState(GST_STATE_NULL)
    }

    @Test("no url: the state change fails with a message saying what to set")
    func missingURL() throws {
        let pipeline = try TestPipeline("videotestsrc ! x264enc ! h264parse ! moqsink broadcast=x")
        #expect(pipeline.play() == GST_STATE_CHANGE_FAILURE)
        #expect(pipeline.errors.first?.text?.contains("set the url property") == true, "\(pipeline.errors)")
    }

    @Test("a malformed url")
    func malformedURL() throws {
        let pipeline = try TestPipeline(
            "videotestsrc ! x264enc ! h264parse ! moqsink url=rtmp://relay.example/ broadcast=x")
        #expect(pipeline.play() == GST_STATE_CHANGE_FAILURE)
        #expect(pipeline.errors.first?.text?.contains("unsupported scheme 'rtmp'") == true, "\(pipeline.errors)")
    }

    @Test("an unreachable relay: warnings while retrying, never an error")
    func unreachable() async throws {
        let pipeline = try TestPipeline(
            "moqsink name=m url=moql://127.0.0.1:9/anon broadcast=x tls-disable-verify=true \(Self.video) ! \(Self.h264) ! m.sink_0"
        )
        #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
        try await pipeline.waitFor { $0.isWarning && $0.text?.contains("cannot reach") == true }
        // A second attempt follows the 1 s backoff; still no ERROR. (Generous: in a test process
        // whose few cooperative threads other tests keep busy, the backoff's timer can fire late.)
        try await pipeline.waitFor(.seconds(30)) { _ in
            pipeline.warnings.filter { $0.text?.contains("cannot reach") == true }.count >= 2
        }
        #expect(pipeline.errors.isEmpty)
        pipeline.setState(GST_STATE_NULL)
    }

    @Test("a wrong fingerprint: a clear error, no retry")
    func wrongFingerprint() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let pipeline = try TestPipeline(
            "moqsink name=m url=\(relay.url()) broadcast=x tls-fingerprint=\(String(repeating: "ab", count: 32)) "
                + "\(Self.video) ! \(Self.h264) ! m.sink_0")
        #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
        let error = try await pipeline.waitFor { $0.isError }
        #expect(error.text?.contains("fingerprint mismatch") == true, "\(error)")
        let sink = pipeline.element("m")!
        defer { gst_object_unref(sink) }
        #expect(stringProperty(sink, "status") == "failed")
        pipeline.setState(GST_STATE_NULL)
    }

    @Test("data pads (application/x-moq-data): each buffer one frame of a named track, read by a Rust subscriber")
    func dataTrack() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let name = RustPeer.uniqueName("data")
        let pipeline = try TestPipeline(
            "appsrc name=src is-live=true do-timestamp=true format=time caps=application/x-moq-data "
                + "! m.sink_0 moqsink name=m url=\(relay.url()) broadcast=\(name) tls-fingerprint=\(relay.fingerprint) "
                + "sink_0::track=chat")
        #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
        let subscriber = try RustPeer.launch(
            ["subscribe"] + relay.client + [
                "--broadcast", name, "--track", "chat", "--count", "3", "--max-latency-ms", "5000",
            ])
        defer { subscriber.terminateInBackground() }
        _ = try await subscriber.waitFor(event: "subscribed", timeout: .seconds(20))
        let src = try AppSource(pipeline.base, name: "src")
        for text in ["hello", "moq", "world"] {
            try src.push(Array(text.utf8))
            try await Task.sleep(for: .milliseconds(50))  // pacing: one cue every 50 ms
        }
        var texts: [String] = []
        for _ in 0..<3 {
            let frame = try await subscriber.waitFor(event: "frame", timeout: .seconds(20))
            texts.append(frame.bytes("payload").map { String(decoding: $0, as: UTF8.self) } ?? "")
        }
        #expect(texts == ["hello", "moq", "world"])
        #expect(pipeline.errors.isEmpty, "\(pipeline.errors)")
        pipeline.setState(GST_STATE_NULL)
    }

    @Test("H.264 4:4:4 (x264enc's default from RGB): a WARNING that says how to publish what players decode")
    func warnsAbout444() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let pipeline = try TestPipeline(
                "videotestsrc is-live=true ! video/x-raw,format=Y444,width=320,height=240 ! x264enc tune=zerolatency ! "
                    + "h264parse ! moqsink \(relay.elementProperties) broadcast=x")
            #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
            let warning = try await pipeline.waitFor { $0.isWarning && $0.text?.contains("not decodable") == true }
            #expect(
                warning.text?.contains("4:4:4") == true && warning.text?.contains("format=I420") == true, "\(warning)")
            #expect(pipeline.errors.isEmpty)
            pipeline.setState(GST_STATE_NULL)
        }
    }

    @Test("unsupported caps: not-negotiated, with a message")
    func unsupportedCaps() async throws {
        try await scoped(
            try MoqRelay.start(MoqRelay.Configuration(host: "127.0.0.1", port: 0, logger: .silent)),
            teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            // Raw AAC without its AudioSpecificConfig cannot be described in a catalog.
            let pipeline = try TestPipeline(
                "appsrc name=src is-live=true format=time caps=audio/mpeg,mpegversion=4,stream-format=raw,rate=48000,channels=2 "
                    + "! moqsink url=moql://127.0.0.1:\(relay.port)/anon broadcast=x tls-fingerprint=\(relay.fingerprint)"
            )
            #expect(pipeline.play() != GST_STATE_CHANGE_FAILURE)
            // The ERROR is what counts, not the flow.
            try? AppSource(pipeline.base, name: "src").push([UInt8](repeating: 0, count: 16))
            let error = try await pipeline.waitFor { $0.isError }
            #expect(
                error.text?.contains("unsupported caps") == true && error.text?.contains("codec_data") == true,
                "\(error)")
            // And a format outside the template does not link at all.
            #expect(throws: PipelineError.self) {
                _ = try TestPipeline("videotestsrc ! video/x-raw ! moqsink url=moql://h:1/ broadcast=x")
            }
            pipeline.setState(GST_STATE_NULL)
        }
    }
}

/// A UDP port nothing listens on right now.
func freeUDPPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return UInt16(bigEndian: addr.sin_port)
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqKit
import MoqTestKit
import SwiftMoQ
import Testing

@Suite("swiftmoq publish / play / demo end to end", .serialized, .timeLimit(.minutes(3)))
struct CLIMediaTests {
    @Test("publish --source test → embedded relay → play --record: a Matroska file that decodes")
    func publishThenRecord() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let connection = ["--url", "moql://127.0.0.1:\(relay.port)/anon", "--tls-fingerprint", relay.fingerprint]
            let publisher = try CLI.start(
                ["publish"] + connection + [
                    "--broadcast", "cli/test", "--source", "test", "--width", "320", "--height", "240", "--duration",
                    "20",
                ])
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-cli-\(getpid()).mkv")
            defer { try? FileManager.default.removeItem(at: file) }
            let player = try await CLI.run(
                ["play"] + connection + ["--broadcast", "cli/test", "--record", file.path, "--duration", "4"],
                timeout: .seconds(40))
            #expect(player.status == 0, "\(player.stderr)")
            kill(publisher.process.processIdentifier, SIGINT)
            let published = try await publisher.wait(timeout: .seconds(20))
            #expect(published.status == 0, "\(published.stderr)")

            let decoded = try await decodeRecording(file)
            #expect(decoded.errors.isEmpty, "\(decoded.errors)")
            #expect(
                decoded.videoFrames >= 60 && decoded.audioBuffers >= 100,
                "\(decoded.videoFrames) video frames, \(decoded.audioBuffers) audio buffers")
        }
    }

    @Test("play: an unknown broadcast fails after --timeout with what to check; bad --source is a usage error")
    func badInput() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let connection = ["--url", "moql://127.0.0.1:\(relay.port)/anon", "--tls-fingerprint", relay.fingerprint]
            let missing = try await CLI.run(
                ["play"] + connection + ["--broadcast", "nobody", "--timeout", "1", "--headless"])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("was not announced"), "\(missing.stderr)")
            let usage = try await CLI.run(["publish"] + connection + ["--broadcast", "x", "--source", "webcam"])
            #expect(usage.status == 2)
            #expect(usage.stderr.contains("unknown --source 'webcam'"), "\(usage.stderr)")
        }
    }

    @Test("publish --ladder: renditions <track>/<name> in one section; a bad ladder is a usage error")
    func publishLadder() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let connection = ["--url", "moql://127.0.0.1:\(relay.port)/anon", "--tls-fingerprint", relay.fingerprint]
            let publisher = try CLI.start(
                ["publish"] + connection + [
                    "--broadcast", "cli/ladder", "--source", "test", "--no-audio", "--duration", "20", "--ladder",
                    "hi:320x180@600000,lo:160x90@150000",
                ])
            defer { kill(publisher.process.processIdentifier, SIGINT) }
            let session = try await MoqSession.connect(
                "moql://127.0.0.1:\(relay.port)/anon",
                options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
            defer { session.close() }
            try await session.waitForBroadcast("cli/ladder", timeout: .seconds(30))
            // moqsink completes its catalog as each pad's caps and tags arrive: read snapshots until both
            // renditions carry a bitrate (subscribing again if the track ends meanwhile).
            var bitrates: [String: UInt64] = [:]
            let deadline = ContinuousClock.now + .seconds(30)
            while bitrates.count < 2, ContinuousClock.now < deadline {
                let catalogTrack = session.subscribe(broadcast: "cli/ladder", track: HangCatalog.trackName)
                let consumer = catalogTrack.consumer(maxLatencyMs: 10_000)
                while bitrates.count < 2, let group = try? await consumer.nextGroup(),
                    let frame = try? await group.nextFrame()
                {
                    for rendition in try HangCatalog(json: frame.payload.array).renditions {
                        if case .video(let v) = rendition.config, let b = v.bitrate { bitrates[rendition.name] = b }
                    }
                }
                catalogTrack.cancel()
                if bitrates.count < 2 { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(bitrates == ["test-video/hi": 600 * 1024, "test-video/lo": 150 * 1024], "x264enc's kbit/s × 1024")
            let usage = try await CLI.run(
                ["publish"] + connection + ["--broadcast", "x", "--source", "test", "--ladder", "hi:320x180"])
            #expect(usage.status == 2)
            #expect(usage.stderr.contains("NAME:WxH@BPS"), "\(usage.stderr)")
        }
    }

    @Test(
        "publish --source file: passes the file's H.264 and Opus through (its codec and size), says so, exits 0 at the end"
    )
    func publishFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-file-\(getpid()).mkv")
        defer { try? FileManager.default.removeItem(at: file) }
        // 5 s of 320x180 H.264 and Opus: long enough to read the catalog while the publisher runs.
        try await TestMediaFile.matroska(at: file.path, width: 320, height: 180, frames: 150, audio: true)
        let probed = try MediaFileProbe.streams(inFile: file.path)
        guard case .video(let fileVideo)? = probed.first(where: { $0.kind == .video })?.rendition?.config else {
            Issue.record("the file's video was not probed: \(probed)")
            return
        }
        let (catalog, result) = try await publishAndReadCatalog(file.path, broadcast: "cli/file")
        let video = catalog.video.renditions.values.first
        #expect(
            video?.codec == fileVideo.codec, "published \(String(describing: video?.codec)), file \(fileVideo.codec)")
        #expect(video?.codedWidth == 320 && video?.codedHeight == 180)
        #expect(catalog.audio.renditions.values.first?.codec == "opus")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("passes video (\(fileVideo.codec)) and audio (opus) through"), "\(result.stderr)")
    }

    @Test("publish --source file: --transcode decodes and re-encodes, and says so")
    func publishFileTranscoded() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftmoq-file-t-\(getpid()).mkv")
        defer { try? FileManager.default.removeItem(at: file) }
        try await TestMediaFile.matroska(at: file.path, width: 320, height: 180, frames: 90, audio: true)
        let (catalog, result) = try await publishAndReadCatalog(
            file.path, broadcast: "cli/transcoded", extra: ["--transcode"])
        // The file's picture size stays unless one is asked for.
        let video = catalog.video.renditions.values.first
        #expect(video?.codedWidth == 320 && video?.codedHeight == 180)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("decodes and re-encodes video as"), "\(result.stderr)")
    }

    /// Runs `publish --source file:PATH`, reads the first catalog listing video and audio, and
    /// waits for the command to end by itself (the file is paced to real time).
    private func publishAndReadCatalog(_ path: String, broadcast: String, extra: [String] = []) async throws
        -> (HangCatalog, CLI.Result)
    {
        return try await withRelay(try localRelay()) {
            (relay) async throws in
            let connection = ["--url", "moql://127.0.0.1:\(relay.port)/anon", "--tls-fingerprint", relay.fingerprint]
            let publisher = try CLI.start(
                ["publish"] + connection + ["--broadcast", broadcast, "--source", "file:\(path)"] + extra)
            let session = try await MoqSession.connect(
                "moql://127.0.0.1:\(relay.port)/anon",
                options: ClientOptions(tls: TLSOptions(fingerprint: relay.fingerprint)))
            defer { session.close() }
            try await session.waitForBroadcast(broadcast, timeout: .seconds(30))
            // Until the catalog names both kinds: subscribing again when its track ends or fails before
            // (once CI saw no catalog at all, under ThreadSanitizer; what happened is recorded).
            var catalog = HangCatalog()
            var attempts: [String] = []
            let deadline = ContinuousClock.now + .seconds(30)
            reading: while ContinuousClock.now < deadline, publisher.process.isRunning {
                let catalogTrack = session.subscribe(broadcast: broadcast, track: HangCatalog.trackName)
                defer { catalogTrack.cancel() }
                let consumer = catalogTrack.consumer(maxLatencyMs: 10_000)
                do {
                    while let group = try await consumer.nextGroup() {
                        guard let frame = try await group.nextFrame() else { continue }
                        catalog = try HangCatalog(json: frame.payload.array)
                        if !catalog.video.renditions.isEmpty && !catalog.audio.renditions.isEmpty { break reading }
                    }
                    attempts.append("the catalog track ended")
                } catch {
                    attempts.append("\(error)")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            if catalog.video.renditions.isEmpty || catalog.audio.renditions.isEmpty {
                Issue.record("no complete catalog: \(attempts), publisher running: \(publisher.process.isRunning)")
            }
            let result = try await publisher.wait(timeout: .seconds(30))
            return (catalog, result)
        }
    }

    @Test("make demo's script: relay, publish, play back headless, stats each second, exit 0")
    func demo() async throws {
        let script = try RustPeer.packageRoot().appendingPathComponent("scripts/demo.sh")
        let process = Process()
        process.executableURL = script
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFTMOQ_BIN"] = try CLI.executable().path
        environment["DEMO_SECONDS"] = "4"
        environment.removeValue(forKey: "DISPLAY")
        environment.removeValue(forKey: "WAYLAND_DISPLAY")
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let (running, pipe) = (Handed(process), Handed(output))
        let data = try await offThePool {
            let data = pipe.value.fileHandleForReading.readDataToEndOfFile()
            running.value.waitUntilExit()
            return data
        }
        let text = String(decoding: data, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        let lines = text.split(separator: "\n").filter { $0.contains("video") && $0.contains("fps") }
        #expect(lines.count >= 4, "\(text)")
        #expect(text.contains("done: ") && text.contains("e2e latency p50"), "\(text)")
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqInteropSupport
import MoqKit
import MoqPipeline
import MoqSync
import MoqTestKit
import SwiftMoQ
import Testing

/// A private D-Bus session bus for one test: `dbus-daemon --session`, stopped at the end.
final class PrivateBus: Sendable {
    private let daemon: Daemon
    var address: String { daemon.firstLine }

    init() async throws {
        daemon = try await Daemon(
            "/usr/bin/dbus-daemon", ["--session", "--nofork", "--print-address=1", "--address=unix:tmpdir=/tmp"])
    }

    /// `gdbus call` on this bus, off the cooperative pool; its standard output.
    func call(_ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        process.arguments = ["call", "--address", address] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { _ in
                continuation.resume(
                    returning: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
            }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
    }
}

@Suite("MPRIS on a private session bus", .serialized, .timeLimit(.minutes(2)))
struct MPRISTests {
    static let player = ["--dest", "org.mpris.MediaPlayer2.swiftmoq", "--object-path", "/org/mpris/MediaPlayer2"]

    @Test("Metadata follows the title; PlayPause pauses within 100 ms and resumes; PlaybackStatus says so")
    func remoteControl() async throws {
        let bus = try await PrivateBus()
        try await withTestRelay() { (relay) async throws in
            let radio = try await TaggedRadio.start(relay, tags: "title=\"First Song\",artist=Someone")
            defer { radio.publisher.stop() }
            let (publisher, viewer, catalog) = (radio.publisher, radio.viewer, radio.catalog)
            let heard = Lock<[UInt64]>([])
            let player = try Player(
                catalog: catalog,
                output: .callbacks(video: nil, audio: { _ in heard.withLock { $0.append(SystemClock().now()) } }),
                mode: .longForm(bufferDuration: .seconds(5)))
            try await player.play()
            try player.publishMPRIS(busAddress: bus.address)

            func get(_ property: String) async throws -> String {
                try await bus.call(
                    Self.player + [
                        "--method", "org.freedesktop.DBus.Properties.Get", "org.mpris.MediaPlayer2.Player", property,
                    ])
            }
            var metadata = ""
            try await eventually("Metadata with the first title", timeout: .seconds(20)) {
                metadata = (try? await get("Metadata")) ?? ""
                return metadata.contains("First Song")
            }
            #expect(metadata.contains("xesam:artist") && metadata.contains("Someone"), "\(metadata)")
            #expect(try await get("PlaybackStatus").contains("Playing"))
            try publisher.element(named: "tags").set("tags", "title=\"Second Song\",artist=Someone")
            try await eventually("Metadata with the next title", timeout: .seconds(10)) {
                (try? await get("Metadata"))?.contains("Second Song") ?? false
            }

            // PlayPause from the bus: the audio stops.
            try await eventually("audio", timeout: .seconds(10)) { heard.withLock { $0.count } > 50 }
            let calledAt = SystemClock().now()
            _ = try await bus.call(Self.player + ["--method", "org.mpris.MediaPlayer2.Player.PlayPause"])
            try await Task.sleep(for: .milliseconds(600))  // under test: the window in which audio must stop
            let last = heard.withLock { $0.last } ?? calledAt
            let pauseMs = Double(last > calledAt ? last - calledAt : 0) / 1e6
            let lastBefore = heard.withLock { $0.last { $0 < calledAt } } ?? calledAt
            let after = heard.withLock { $0.filter { $0 >= calledAt }.count }
            // Buffers come every 20 ms: with none after the call began, the pause took effect before the
            // next one was due.
            let dueMs = max(0, 20 - Double(calledAt - lastBefore) / 1e6)
            print(
                "MPRIS: after PlayPause (a gdbus process) began, \(after) buffers, the last \(pauseMs) ms after it"
                    + (after == 0 ? " (the next was due \(dueMs) ms after it)" : ""))
            #expect(pauseMs <= 100)
            try await eventually("PlaybackStatus Paused", timeout: .seconds(5)) {
                (try? await get("PlaybackStatus"))?.contains("Paused") ?? false
            }
            let count = heard.withLock { $0.count }
            _ = try await bus.call(Self.player + ["--method", "org.mpris.MediaPlayer2.Player.PlayPause"])
            try await eventually("audio again", timeout: .seconds(5)) { heard.withLock { $0.count } > count + 10 }
            #expect(try await get("PlaybackStatus").contains("Playing"))
            #expect(
                try await bus.call([
                    "--dest", "org.mpris.MediaPlayer2.swiftmoq", "--object-path", "/org/mpris/MediaPlayer2", "--method",
                    "org.freedesktop.DBus.Properties.Get", "org.mpris.MediaPlayer2", "Identity",
                ]).contains("SwiftMoQ"))
            await player.stop()
            await viewer.close()
        }
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqInteropSupport
import MoqPipeline
import MoqTestKit
import Testing

/// `make soak`: moqsink → proxy → relay → proxy → moqsrc for `SWIFTMOQ_SOAK` seconds (600 by
/// default in the Makefile), cycling through relay restarts, blackholes (one past the idle
/// timeout) and loss, sampling this process's RSS, threads and file descriptors every second
/// into `build/soak/samples.csv`. Passes when memory is flat (≤ 5 MB growth from the end of
/// the first cycle to the end of the last), threads and descriptors come back to where they
/// were, and the relay holds exactly the two sessions it should.
@Suite("Soak (make soak)", .serialized, .peersStopped)
struct SoakTests {
    static let seconds = ProcessInfo.processInfo.environment["SWIFTMOQ_SOAK"].flatMap { Int($0) }

    /// One cycle of the soak, about 60 s.
    enum Phase: CaseIterable {
        case steady, blackhole, loss, longBlackhole, relayRestart

        var duration: Duration {
            switch self {
            case .steady: .seconds(15)
            case .blackhole: .seconds(5)
            case .loss: .seconds(10)
            case .longBlackhole: .seconds(12)  // past the 10 s idle timeout: both reconnect
            case .relayRestart: .seconds(2)
            }
        }
    }

    struct Sample {
        var kinds: [String: Int] = [:]
        var second: Int
        var rssKB: Int
        var threads: Int
        var fds: Int
        var sessions: Int
    }

    /// What the descriptors point at (socket:[…], pipe:[…], anon_inode:[eventfd]…), for a leak report.
    static func descriptorKinds() -> [String: Int] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var kinds: [String: Int] = [:]
        for name in names {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) ?? "?"
            kinds[String(target.prefix { $0 != ":" && $0 != "[" }), default: 0] += 1
        }
        return kinds
    }

    static func count(_ directory: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
    }

    @Test("memory flat, no leaked sessions, threads or descriptors", .enabled(if: seconds != nil))
    func soak() async throws {
        let total = Duration.seconds(Self.seconds ?? 0)
        SwiftMoQElements.register()
        try await withTestRelay() { (relay) async throws in
            // The proxy forgets a flow after 5 s idle, so the sockets of clients that reconnected from
            // a new port are closed before a cycle ends and do not count as ours.
            let proxy = try UDPProxy.start(forwardingTo: relay.port, seed: 7, flowIdleTimeout: .seconds(5))
            let broadcast = "soak/\(UInt32.random(in: 0...UInt32.max))"
            let publisher = Pipeline(
                launch:
                    "videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 "
                    + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 bitrate=500 ! h264parse "
                    + "! video/x-h264,stream-format=avc,alignment=au ! moqsink name=moq \(relay.moqsinkProperties(broadcast: broadcast, via: proxy)) "
                    + "audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=2 ! opusenc ! moq.")
            let player = Pipeline(
                launch: "moqsrc name=src \(relay.connectionProperties(via: proxy)) broadcast=\(broadcast) "
                    + "src.video_0 ! queue ! appsink name=video sync=false max-buffers=100 drop=true "
                    + "src.audio_0 ! queue ! fakesink sync=false")
            try player.start()
            try publisher.start()
            let sink = try AppSink(player, name: "video")
            let started = ContinuousClock.now
            var samples: [Sample] = []
            var cycleEnds: [Int] = []
            var frames = 0
            func sample() {
                samples.append(
                    Sample(
                        kinds: Self.descriptorKinds(),
                        second: Int((ContinuousClock.now - started).components.seconds),
                        rssKB: residentBytes() / 1024, threads: Self.count("/proc/self/task"),
                        fds: Self.count("/proc/self/fd"), sessions: relay.relay?.sessionCount ?? 0))
            }
            func run(for duration: Duration) async throws {
                let end = ContinuousClock.now + duration
                var nextSample = ContinuousClock.now
                while ContinuousClock.now < end {
                    while sink.tryPull() != nil { frames += 1 }
                    if ContinuousClock.now >= nextSample {
                        sample()
                        nextSample += .seconds(1)
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            repeat {
                for phase in Phase.allCases {
                    switch phase {
                    case .steady: proxy.restore()
                    case .blackhole, .longBlackhole: proxy.blackhole()
                    case .loss: proxy.impair(.loss(0.05))
                    case .relayRestart:
                        proxy.restore()
                        await relay.stop()
                    }
                    try await run(for: phase.duration)
                    if phase == .relayRestart { try await relay.restart() }
                }
                proxy.restore()
                try await run(for: .seconds(8))  // settle: both elements back, sessions counted
                cycleEnds.append(samples.count - 1)
            } while ContinuousClock.now - started < total

            let csv =
                "second,rss_kb,threads,fds,relay_sessions\n"
                + samples.map { "\($0.second),\($0.rssKB),\($0.threads),\($0.fds),\($0.sessions)" }.joined(
                    separator: "\n")
            let directory = try RustPeer.packageRoot().appendingPathComponent("build/soak")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try csv.write(to: directory.appendingPathComponent("samples.csv"), atomically: true, encoding: .utf8)

            let first = samples[cycleEnds[0]]
            let last = samples[cycleEnds[cycleEnds.count - 1]]
            print(
                "SOAK \(cycleEnds.count) cycles, \(samples.count) s, \(frames) frames; after the first cycle "
                    + "RSS \(first.rssKB) kB, \(first.threads) threads, \(first.fds) fds; at the end RSS \(last.rssKB) kB, "
                    + "\(last.threads) threads, \(last.fds) fds, relay sessions \(last.sessions)")
            #expect(cycleEnds.count >= 2, "a soak shorter than two cycles measures nothing")
            #expect(last.rssKB - first.rssKB <= 5 * 1024, "RSS grew \(last.rssKB - first.rssKB) kB")
            #expect(last.threads <= first.threads + 2, "threads \(first.threads) → \(last.threads)")
            #expect(
                last.fds <= first.fds + 2, "file descriptors \(first.fds) → \(last.fds): \(first.kinds) → \(last.kinds)"
            )
            #expect(last.sessions == 2, "the relay holds \(last.sessions) sessions (publisher and player expected)")
            #expect(frames > 0)
            let errors = (publisher.collectedMessages + player.collectedMessages).filter(\.isError)
            #expect(errors.isEmpty, "\(errors)")
            player.stop()
            publisher.stop()
            proxy.stop()
        }
    }
}

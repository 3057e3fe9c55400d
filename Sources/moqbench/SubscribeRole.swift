// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import SwiftMoQ

/// `moqbench subscribe`: one subscription through the public consumer API (`nextGroup` / `nextFrame`),
/// timing each frame as it is handed to the application.
enum SubscribeRole {
    static let usage = """
        usage: moqbench subscribe --url URL --tls-fingerprint HEX --broadcast PATH [options]

        Waits for the broadcast, subscribes, and reads every frame in sequence order. Stops when the
        track ends, after --frames frames, or at --deadline-s. Events: subscribed, first_frame,
        progress {frames, groups, rss_kib} (every --progress-every frames), result {frames, bytes, groups,
        highest_seq, out_of_order, first_ns, last_ns, latencies_us, cpu_s, end, groups_skipped}.

        \(Client.help)
          --broadcast PATH          broadcast to read (required)
          --track NAME              track name (default bench)
          --max-latency-ms MS       latency budget of the subscription (default 10000)
          --frames N                stop after N frames (default: at the end of the track)
          --warmup-frames N         frames with seq < N are counted but not timed (default 0)
          --deadline-s S            give up after S seconds (default 120)
          --ack-fifo PATH           write the cumulative frame count (u64 LE) here after each frame
          --progress-every N        print a progress event every N frames (default 0 = never)
        \(BenchProtocol.help)
        """

    private static let known = Client.options.union([
        "broadcast", "track", "max-latency-ms", "frames", "warmup-frames", "deadline-s", "ack-fifo",
        "progress-every", "protocol",
    ])

    static func run(_ argv: [String]) async throws(BenchError) {
        signal(SIGPIPE, SIG_IGN)
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        let trackName = options.value("track") ?? "bench"
        let budget = UInt64(max(0, try options.integer("max-latency-ms", default: 10_000)))
        let limit = try options.integer("frames", default: 0)
        let progressEvery = UInt64(max(0, try options.integer("progress-every", default: 0)))
        let deadline = try options.double("deadline-s", default: 120)
        var recorder = FrameRecorder(warmupFrames: UInt64(max(0, try options.integer("warmup-frames", default: 0))))
        let acks = try options.value("ack-fifo").map { path throws(BenchError) in try AckWriter(path: path) }

        let family = try BenchProtocol(options.value("protocol"))
        let session = try await BenchSession.connect(client, family, role: .subscriber)
        do { try await session.waitForBroadcast(path, timeout: .seconds(30)) } catch {
            throw .runtime("broadcast \(path): \(error.description)")
        }
        let reading = session.read(path, track: trackName, budgetMs: budget)
        let consumer = reading.consumer
        Events.emit("subscribed", ["broadcast": .string(path), "track": .string(trackName)])
        let timer = Task {
            try await Task.sleep(for: .milliseconds(Int64(deadline * 1000)))
            consumer.cancel()
        }
        var ended = "track ended"
        do {
            reading: while let group = try await consumer.nextGroup() {
                recorder.groupStarted()
                while true {
                    let frame: Frame
                    do {
                        guard let next = try await group.nextFrame() else { break }
                        frame = next
                    } catch {
                        recorder.groupFailed()  // that group was reset (dropped by a relay): the track goes on
                        break
                    }
                    recorder.record(frame.payload, at: Monotonic.now())
                    acks?.acknowledge(recorder.frames)
                    if recorder.frames == 1 { Events.emit("first_frame", ["ns": .int(Int(recorder.firstArrival!))]) }
                    if progressEvery > 0 && recorder.frames % progressEvery == 0 {
                        Events.emit(
                            "progress",
                            [
                                "frames": .int(Int(recorder.frames)), "groups": .int(Int(recorder.groups)),
                                "rss_kib": .int(Monotonic.residentKiB()),
                            ])
                    }
                    if limit > 0 && recorder.frames >= limit {
                        ended = "frame limit"
                        break reading
                    }
                }
            }
        } catch {
            ended = error == .cancelled ? "deadline" : error.description
        }
        timer.cancel()
        Events.emit(
            "result",
            fields: recorder.fields + [("end", .string(ended)), ("groups_skipped", .int(Int(consumer.groupsSkipped)))])
        reading.cancel()
        session.close()
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import SwiftMoQ

/// `moqbench publish`: stamped frames on one track, paced (`--fps`), as fast as the subscriber's
/// acknowledgements allow (`--fps 0 --ack-fifo PATH --window N`), or open loop: as fast as the
/// publisher can write, whatever its subscribers take (`--fps 0 --window 0`).
enum PublishRole {
    static let usage = """
        usage: moqbench publish --url URL --tls-fingerprint HEX --broadcast PATH [options]

        Publishes frames whose payload starts with (seq u64 LE, CLOCK_MONOTONIC ns u64 LE) and is
        padded to --frame-size. Writes nothing until --go-file exists. Events: announced, started,
        result {sent, bytes, first_ns, last_ns, cpu_s, stalled}, done.

        \(Client.help)
          --broadcast PATH          broadcast to publish (required)
          --track NAME              track name (default bench)
          --frame-size BYTES        payload size (default 1000)
          --fps N                   frames per second; 0 = unpaced: as fast as acknowledgements allow,
                                    or (with --window 0) as fast as this process writes (default 100)
          --frames-per-group N      frames in each group (default 1)
          --seconds S               how long to write (default 10)
          --frames N                write exactly N frames instead (default: by --seconds)
          --go-file PATH            wait for this file before writing
          --ack-fifo PATH           read the subscriber's cumulative frame count from this FIFO
          --window N                frames written but not acknowledged, at most; 0 = no window (default 32)
          --max-age-ms MS           the track's max age (TRACK_INFO): how long caches keep groups (default 10000)
          --linger-s S              stay connected after the last frame, for delivery (default 2)
        \(BenchProtocol.help)
        """

    private static let known = Client.options.union([
        "broadcast", "track", "frame-size", "fps", "frames-per-group", "seconds", "frames", "go-file", "ack-fifo",
        "window", "max-age-ms", "linger-s", "protocol",
    ])

    /// What to write and how fast.
    struct Plan: Sendable {
        var frameSize: Int
        var fps: Double
        var framesPerGroup: Int
        var frames: UInt64?
        var seconds: Double
        var window: UInt64
        var ackFifo: String?
    }

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        let trackName = options.value("track") ?? "bench"
        let explicitFrames = try options.integer("frames", default: -1)
        var plan = Plan(
            frameSize: try options.integer("frame-size", default: 1000), fps: try options.double("fps", default: 100),
            framesPerGroup: max(1, try options.integer("frames-per-group", default: 1)),
            frames: explicitFrames >= 0 ? UInt64(explicitFrames) : nil,
            seconds: try options.double("seconds", default: 10),
            window: UInt64(max(0, try options.integer("window", default: 32))), ackFifo: options.value("ack-fifo"))
        guard plan.fps > 0 || plan.ackFifo != nil || plan.window == 0 else {
            throw .usage("--fps 0 needs --ack-fifo (or --window 0 for an open-loop publisher)")
        }
        guard plan.fps > 0 || plan.frames != nil || plan.window > 0 else {
            throw .usage("an open-loop publisher (--fps 0 --window 0) needs --frames")
        }
        if plan.frames == nil && plan.fps > 0 { plan.frames = UInt64(plan.seconds * plan.fps) }
        let linger = try options.double("linger-s", default: 2)
        let maxAge = UInt64(max(0, try options.integer("max-age-ms", default: 10_000)))

        let family = try BenchProtocol(options.value("protocol"))
        let session = try await BenchSession.connect(client, family, role: .publisher)
        let broadcast = BroadcastProducer(path: path)
        let track = broadcast.createTrack(
            trackName, info: TrackInfo(priority: 127, maxAgeMs: maxAge, timescale: 1_000_000))
        session.publish(broadcast)
        Events.emit("announced", ["broadcast": .string(path), "track": .string(trackName)])
        let acks = Unsendable(try plan.ackFifo.map { path throws(BenchError) in try AckReader(path: path) })
        await waitForGoFile(options.value("go-file"))
        Events.emit("started", ["ns": .int(Int(Monotonic.now()))])
        let outcome = await onDedicatedThread(name: "publish") { [plan] in write(plan, to: track, acks: acks.value) }
        Events.emit(
            "result",
            [
                "sent": .int(Int(outcome.sent)), "bytes": .int(Int(outcome.bytes)),
                "first_ns": .int(Int(outcome.first)), "last_ns": .int(Int(outcome.last)),
                "stalled": .bool(outcome.stalled), "cpu_s": .double(Monotonic.processCPUSeconds()),
            ])
        await session.linger(linger)
        broadcast.close()
        await session.closeAndWait()
        Events.emit("done")
    }

    /// What the writing loop did.
    struct Outcome: Sendable {
        var sent: UInt64 = 0
        var bytes: UInt64 = 0
        var first: UInt64 = 0
        var last: UInt64 = 0
        /// The subscriber stopped acknowledging for 10 s.
        var stalled = false
    }

    /// The writing loop (blocking: pacing sleeps and acknowledgement reads happen on this thread).
    private static func write(_ plan: Plan, to track: TrackProducer, acks: AckReader?) -> Outcome {
        var outcome = Outcome()
        let start = Monotonic.now()
        let interval = plan.fps > 0 ? UInt64(1e9 / plan.fps) : 0
        let end = start + UInt64(plan.seconds * 1e9)
        var group: GroupProducer?
        var seq: UInt64 = 0
        while plan.frames.map({ seq < $0 }) ?? (Monotonic.now() < end) {
            if let acks, plan.window > 0, seq >= plan.window,
                !acks.wait(untilAcknowledged: seq - plan.window + 1, timeout: 10_000_000_000)
            {
                outcome.stalled = true
                break
            }
            if interval > 0 { Monotonic.sleep(until: start + seq * interval) }
            if seq % UInt64(plan.framesPerGroup) == 0 {
                group?.finish()
                group = track.appendGroup()
            }
            let payload = StampedPayload.make(seq: seq, size: plan.frameSize)
            let media = interval > 0 ? seq * interval / 1000 : (Monotonic.now() - start) / 1000
            _ = group!.write(payload, timestamp: media)
            if seq == 0 { outcome.first = Monotonic.now() }
            outcome.last = Monotonic.now()
            outcome.bytes += UInt64(payload.count)
            seq += 1
        }
        group?.finish()
        track.finish()
        outcome.sent = seq
        return outcome
    }
}

/// Hands a value that is used by one thread at a time to another thread.
struct Unsendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

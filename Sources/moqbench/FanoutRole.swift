// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import MoqSync
import SwiftMoQ

/// `moqbench fanout-subscribers`: the load generator of the fan-out case. N sessions in this one
/// process (spread over `--threads` QUIC event-loop threads), each subscribed to the same track and
/// read where its frames arrive (``DirectTrackReader``).
enum FanoutRole {
    static let usage = """
        usage: moqbench fanout-subscribers --url URL --tls-fingerprint HEX --broadcast PATH --sessions N [options]

        Connects N sessions (--connect-concurrency at a time), subscribes each to the track, prints
        ready {subscribed, failed}, then reads until every track ends, each has --frames frames, or
        --deadline-s passes. Prints result {sessions, subscribed, failed, frames_per_session,
        bytes, latencies_us (every session's, merged), cpu_s}.

        \(Client.help)
          --broadcast PATH          broadcast to read (required)
          --track NAME              track name (default bench)
          --sessions N              sessions to open (required)
          --max-latency-ms MS       latency budget of each subscription (default 10000)
          --frames N                stop a session after N frames (default: at the end of the track)
          --warmup-frames N         frames with seq < N are counted but not timed (default 0)
          --deadline-s S            stop reading S seconds after ready (default 120)
          --connect-concurrency N   handshakes in flight at once (default 16)
          --threads N               network threads the sessions are spread over (default 1)
        """

    private static let known = Client.options.union([
        "broadcast", "track", "sessions", "max-latency-ms", "frames", "warmup-frames", "deadline-s",
        "connect-concurrency", "threads",
    ])

    /// One subscribed session.
    private struct Reader: Sendable {
        let session: MoqSession
        let remote: RemoteTrack
        let consumer: TrackConsumer
    }

    static func run(_ argv: [String]) async throws(BenchError) {
        let options = try Arguments(argv, options: known, flags: [])
        let client = try Client(options)
        let path = try options.required("broadcast")
        let trackName = options.value("track") ?? "bench"
        let count = try options.integer("sessions", default: 0)
        guard count > 0 else { throw .usage("--sessions must be at least 1") }
        let budget = UInt64(max(0, try options.integer("max-latency-ms", default: 10_000)))
        let limit = UInt64(max(0, try options.integer("frames", default: 0)))
        let warmup = UInt64(max(0, try options.integer("warmup-frames", default: 0)))
        let deadline = try options.double("deadline-s", default: 120)
        let concurrency = max(1, try options.integer("connect-concurrency", default: 16))
        MoqSession.clientNetworkThreads = try options.integer("threads", default: 1)

        let readers = await subscribeAll(
            count: count, concurrency: concurrency, client: client, path: path, track: trackName, budget: budget)
        let failures = ErrorLog()
        Events.emit("ready", ["subscribed": .int(readers.count), "failed": .int(count - readers.count)])
        // Each session's track is read on its network thread (`DirectTrackReader`); this task only
        // gives up missing groups on time, stops everything at the deadline and collects the results.
        let (finished, finish) = AsyncStream<FrameRecorder>.makeStream()
        let direct = readers.map { reader in
            DirectTrackReader(reader.consumer, warmupFrames: warmup, limit: limit) { recorder, error in
                if let error { failures.add(error.description) }
                finish.yield(recorder)
            }
        }
        for d in direct { d.start() }
        let ticker = Task {
            let end = ContinuousClock.now + .milliseconds(Int64(deadline * 1000))
            while ContinuousClock.now < end {
                try await Task.sleep(for: .milliseconds(50))
                for d in direct { d.drain() }
            }
            for d in direct { d.cancel() }
        }
        var recorders: [FrameRecorder] = []
        if !direct.isEmpty {
            for await recorder in finished {
                recorders.append(recorder)
                if recorders.count == direct.count { break }
            }
        }
        ticker.cancel()
        var perSession = recorders.map { Int($0.frames) }
        perSession += Array(repeating: 0, count: count - readers.count)
        let latencies = recorders.flatMap(\.latenciesMicros)
        Events.emit(
            "result",
            [
                "sessions": .int(count), "subscribed": .int(readers.count), "failed": .int(count - readers.count),
                "frames_per_session": .ints(perSession), "bytes": .int(Int(recorders.reduce(0) { $0 + $1.bytes })),
                "latencies_us": .ints(latencies), "cpu_s": .double(Monotonic.processCPUSeconds()),
                "errors": .string(failures.summary),
            ])
        for r in readers {
            r.remote.cancel()
            r.session.close()
        }
    }

    /// Connects and subscribes `count` sessions, at most `concurrency` handshakes at a time.
    private static func subscribeAll(
        count: Int, concurrency: Int, client: Client, path: String, track: String, budget: UInt64
    ) async -> [Reader] {
        await withTaskGroup(of: Reader?.self) { group in
            var started = 0
            var readers: [Reader] = []
            func startNext() {
                started += 1
                group.addTask {
                    do {
                        let session = try await client.connect(role: .subscriber)
                        try await session.waitForBroadcast(path, timeout: .seconds(30))
                        // A viewer keeps what it is about to read, not the publisher's 10 s: hundreds of
                        // sessions each caching 10 s of a 2 Mbit/s track grew this process by 100 MB/s,
                        // and zeroing the new pages cost more than the reading (issue #24's profile).
                        let remote = session.subscribe(
                            broadcast: path, track: track,
                            range: SubscriptionRange(priority: 128, maxLatencyMs: budget),
                            limits: CacheLimits(maxAgeMs: 2000))
                        return Reader(session: session, remote: remote, consumer: remote.consumer(maxLatencyMs: budget))
                    } catch {
                        Events.log("session failed: \(error)")
                        return nil
                    }
                }
            }
            while started < min(concurrency, count) { startNext() }
            for await reader in group {
                if let reader { readers.append(reader) }
                if started < count { startNext() }
            }
            return readers
        }
    }
}

/// Distinct failure messages from many tasks.
final class ErrorLog: Sendable {
    private let messages = Lock<Set<String>>([])

    /// Records a failure.
    func add(_ message: String) { _ = messages.withLock { $0.insert(message) } }

    /// Every distinct message, sorted, joined by "; ".
    var summary: String { messages.withLock { $0.sorted().joined(separator: "; ") } }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import SwiftMoQ

/// `swiftmoq subscribe-track`: prints each frame of a track.
enum SubscribeTrackCommand {
    static let usage = """
        usage: swiftmoq subscribe-track --url URL --broadcast B --track T [--count N] [--format lines|json]
                                        [--max-latency-ms MS] [--priority P] [--timeout S]

        Waits for broadcast B to be announced (up to --timeout), subscribes to track T
        and prints each frame: as a text line (lines) or as one JSON object per line
        (json: {"group":…,"index":…,"timestamp_us":…,"size":…,"payload":"<base64>"}).
        Exits after N frames, or when the track ends.

        \(ClientFlags.help)
          --broadcast B             broadcast path
          --track T                 track name
          --count N                 exit after N frames
          --format lines|json       output format (default lines)
          --max-latency-ms MS       latency budget: older groups are skipped (default 10000; 0 = newest only)
          --priority P              subscriber priority 0-255 (default 128)
          --timeout S               how long to wait for the broadcast (default 10)

        example:
          swiftmoq subscribe-track --url moql://localhost:4443/anon --tls-fingerprint $FP \\
              --broadcast demo --track chat --format json
        """

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv,
                options: ClientFlags.options.union([
                    "broadcast", "track", "count", "format", "max-latency-ms", "priority", "timeout",
                ]),
                flags: ClientFlags.flags)
        } catch { throw .usage(error.description) }
        let client = try ClientFlags(args)
        let broadcast: String
        let trackName: String
        let count: Int?
        let maxLatency: UInt64
        let priority: UInt8
        let timeout: Duration
        do {
            broadcast = try args.required("broadcast")
            trackName = try args.required("track")
            count = try args.optionalInteger("count")
            maxLatency = try args.integer("max-latency-ms", default: 10_000)
            priority = try args.integer("priority", default: 128)
            timeout = try args.seconds("timeout", default: .seconds(10))
        } catch { throw .usage(error.description) }
        let format = args.value("format") ?? "lines"
        guard format == "lines" || format == "json" else { throw .usage("--format must be lines or json") }

        let sessions = try await client.follow(role: .subscriber)
        defer { sessions.stop() }
        guard var session = sessions.current else { throw .runtime("the session ended") }
        var printed = 0
        // The first group not printed yet: a successor session (after GOAWAY) resumes there.
        var nextGroup: UInt64 = 0
        following: while true {
            do {
                try await session.waitForBroadcast(broadcast, timeout: timeout)
            } catch {
                if let next = sessions.successor(of: session) {
                    session = next
                    continue following
                }
                throw .runtime(error.description)
            }
            let remote = session.subscribe(
                broadcast: broadcast, track: trackName,
                range: SubscriptionRange(priority: priority, maxLatencyMs: maxLatency, groupStart: nextGroup))
            let consumer = remote.consumer(maxLatencyMs: maxLatency)
            do {
                groups: while let group = try await consumer.nextGroup() {
                    if group.sequence < nextGroup { continue }
                    var index = Int(0)
                    while let frame = try await group.nextFrame() {
                        let timescale = remote.track.info?.timescale ?? 1_000_000
                        let micros = Self.micros(frame.timestamp, timescale: timescale)
                        if format == "json" {
                            let payload = Data(frame.payload.array).base64EncodedString()
                            Output.line(
                                "{\"group\":\(group.sequence),\"index\":\(index),\"timestamp_us\":\(micros),\"size\":\(frame.payload.count),\"payload\":\"\(payload)\"}"
                            )
                        } else {
                            Output.raw(frame.payload.array + [0x0a])
                        }
                        index += 1
                        printed += 1
                        if let count, printed >= count { break following }
                    }
                    nextGroup = VarInt.saturatingAdd(group.sequence, 1)
                }
                break following
            } catch {
                // The session went away under the subscription: GOAWAY handed over to a successor?
                if let next = sessions.successor(of: session) {
                    Output.info("continuing on the new session from group \(nextGroup)")
                    session = next
                    continue following
                }
                if let e = remote.error { throw .runtime(e.description) }
                throw .runtime("\(error)")
            }
        }
        if let count, printed < count { throw .runtime("the track ended after \(printed) of \(count) frame(s)") }
    }

    /// A timestamp in µs from the track's timescale (saturating: any varint may arrive).
    static func micros(_ timestamp: UInt64, timescale: UInt64) -> UInt64 {
        guard timescale != 1_000_000, timescale > 0 else { return timestamp }
        let (high, low) = timestamp.multipliedFullWidth(by: 1_000_000)
        guard high < timescale else { return .max }
        return timescale.dividingFullWidth((high, low)).quotient
    }
}

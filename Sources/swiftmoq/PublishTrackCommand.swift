// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import SwiftMoQ

/// `swiftmoq publish-track`: each stdin line becomes one frame.
enum PublishTrackCommand {
    static let usage = """
        usage: swiftmoq publish-track --url URL --broadcast B --track T [--frames-per-group N]
                                      [--wait-subscribers N] [--timeout S]

        Publishes each line read from standard input as one frame of track T in
        broadcast B (announced to the relay). A new group starts every N lines
        (default 1). At the end of input the track is finished, everything sent is
        flushed, and the command exits.

        \(ClientFlags.help)
          --broadcast B             broadcast path, e.g. room/cam
          --track T                 track name
          --frames-per-group N      lines per group (default 1)
          --max-age-ms MS           how long groups stay cached for late joiners (default 5000)
          --wait-subscribers N      before exiting, wait until N subscribers received the whole track
          --timeout S               give up waiting for subscribers after S seconds (default 30)

        example:
          printf 'hello\\nworld\\n' | swiftmoq publish-track --url moql://localhost:4443/anon \\
              --tls-fingerprint $FP --broadcast demo --track chat
        """

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv,
                options: ClientFlags.options.union([
                    "broadcast", "track", "frames-per-group", "wait-subscribers", "timeout", "max-age-ms",
                ]),
                flags: ClientFlags.flags)
        } catch { throw .usage(error.description) }
        let client = try ClientFlags(args)
        let broadcastPath: String
        let trackName: String
        let framesPerGroup: Int
        let waitSubscribers: Int
        let timeout: Duration
        let maxAge: UInt64
        do {
            broadcastPath = try args.required("broadcast")
            trackName = try args.required("track")
            framesPerGroup = max(1, try args.integer("frames-per-group", default: 1))
            waitSubscribers = try args.integer("wait-subscribers", default: 0)
            timeout = try args.seconds("timeout", default: .seconds(30))
            maxAge = try args.integer("max-age-ms", default: 5000)
        } catch { throw .usage(error.description) }
        if let problem = BroadcastPath.validationError(broadcastPath) { throw .usage(problem) }

        let broadcast = BroadcastProducer(path: broadcastPath)
        let track = broadcast.createTrack(
            trackName, info: TrackInfo(priority: 127, maxAgeMs: maxAge, timescale: 1_000_000))
        let sessions = try await client.follow(role: .publisher)
        defer { sessions.stop() }
        // Every session publishes the broadcast: the first, and a successor after GOAWAY.
        let publishing = Task {
            var session = sessions.current
            while let s = session {
                s.publish(broadcast)
                session = await sessions.next()
            }
        }
        defer { publishing.cancel() }
        Output.info("publishing \(broadcast.path)/\(trackName)")

        let start = ContinuousClock.now
        var group: GroupProducer?
        var inGroup = 0
        var frames = 0
        while let line = readLine(strippingNewline: true) {
            if sessions.current == nil { break }
            if group == nil || inGroup >= framesPerGroup {
                group?.finish()
                group = track.appendGroup()
                inGroup = 0
            }
            let elapsed = ContinuousClock.now - start
            group!.write(Bytes(utf8: line), timestamp: elapsed.nanoseconds / 1000)
            inGroup += 1
            frames += 1
        }
        group?.finish()
        track.finish()
        guard var session = sessions.current else {
            throw .runtime("the session ended: \(sessions.error?.description ?? "closed")")
        }
        if waitSubscribers > 0 {
            let deadline = ContinuousClock.now + timeout
            while let stats = try? await session.stats(),
                stats.counters.servedSubscriptionsCompleted < UInt64(waitSubscribers)
            {
                if ContinuousClock.now > deadline {
                    Output.info("session counters: \(stats.counters)")
                    throw .runtime("timed out waiting for \(waitSubscribers) subscriber(s) to receive the track")
                }
                guard let now = sessions.current else {
                    throw .runtime("the session ended: \(sessions.error?.description ?? "closed")")
                }
                session = now
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        await session.drain(timeout: .seconds(5))
        Output.info("published \(frames) frame(s)")
        broadcast.close()
        session.close()
        _ = try? await session.closed()
    }
}

// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine

/// `moqbench`: the Swift roles of `make bench` (scripts/bench.py runs them next to the Rust peer's).
///
/// Every role prints JSON lines on standard output (`{"event": "<name>", …}`), the same contract as
/// `Tests/Interop/moqpeer.py`'s `bench-*` subcommands, so the orchestrator reads both stacks alike.
@main
enum MoqBench {
    static let usage = """
        usage: moqbench <role> [--option value]…

        Benchmark roles (each prints JSON lines; scripts/bench.py drives them):
          publish             stamped frames at a fixed rate, or as fast as a subscriber acknowledges
          subscribe           one subscription: counts frames and measures publish-to-receive latency
          fanout-subscribers  N sessions in this process, each subscribed to the same track
          gst-publish         appsrc ! moqsink with a pre-encoded H.264 clip (x264enc ultrafast)
          gst-subscribe       moqsrc latency=0 ! appsink, latency from the publisher-time reference meta
          long-form           moqsrc buffering=long-form vs live: startup, fill rate, longest gap-free outage
          ttff                time to first frame: a new moqsrc ! decodebin ! appsink player, N times
          glass               glass-to-glass: live 1080p30 source → x264 → moqsink → moqsrc → decoder → sink, per stage
          join                viewers joining a running broadcast at random GOP phases: glass to glass, audio, a stall
          ladder              adaptive bitrate through a changing cap, with legs for fixed-rendition players

        Run 'moqbench <role> --help' for a role's options.
        """

    static func main() async {
        let argv = Array(CommandLine.arguments.dropFirst())
        let roles: [String: Subcommand] = [
            "publish": Subcommand(usage: PublishRole.usage, run: PublishRole.run),
            "subscribe": Subcommand(usage: SubscribeRole.usage, run: SubscribeRole.run),
            "fanout-subscribers": Subcommand(usage: FanoutRole.usage, run: FanoutRole.run),
            "gst-publish": Subcommand(usage: GstPublishRole.usage, run: GstPublishRole.run),
            "gst-subscribe": Subcommand(usage: GstSubscribeRole.usage, run: GstSubscribeRole.run),
            "long-form": Subcommand(usage: LongFormRole.usage, run: LongFormRole.run),
            "ttff": Subcommand(usage: TimeToFirstFrameRole.usage, run: TimeToFirstFrameRole.run),
            "glass": Subcommand(usage: GlassRole.usage, run: GlassRole.run),
            "join": Subcommand(usage: JoinRole.usage, run: JoinRole.run),
            "ladder": Subcommand(usage: LadderRole.usage, run: LadderRole.run),
        ]
        switch await Subcommands.dispatch(argv, among: roles) {
        case .missing:
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        case .unknown(let role):
            Events.emit("error", ["message": .string("unknown role '\(role)'")])
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        case .help(let role):
            print(role.usage)
            exit(0)
        case .completed:
            exit(0)
        case .failed(_, let failure):
            Events.emit("error", ["message": .string(failure.isUsage ? "usage: \(failure)" : failure.description)])
            exit(failure.exitCode)
        }
    }
}

/// How a role failed: usage errors exit 2, runtime errors 1 (shared with swiftmoq).
typealias BenchError = CommandFailure

// SPDX-License-Identifier: MIT
import Foundation

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

        Run 'moqbench <role> --help' for a role's options.
        """

    static func main() async {
        var argv = Array(CommandLine.arguments.dropFirst())
        guard let role = argv.first else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        }
        argv.removeFirst()
        let roles: [String: (usage: String, run: ([String]) async throws(BenchError) -> Void)] = [
            "publish": (PublishRole.usage, PublishRole.run),
            "subscribe": (SubscribeRole.usage, SubscribeRole.run),
            "fanout-subscribers": (FanoutRole.usage, FanoutRole.run),
            "gst-publish": (GstPublishRole.usage, GstPublishRole.run),
            "gst-subscribe": (GstSubscribeRole.usage, GstSubscribeRole.run),
        ]
        guard let entry = roles[role] else {
            Events.emit("error", ["message": .string("unknown role '\(role)'")])
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        }
        if argv.contains("--help") || argv.contains("-h") {
            print(entry.usage)
            exit(0)
        }
        do {
            try await entry.run(argv)
            exit(0)
        } catch {
            Events.emit("error", ["message": .string(error.description)])
            exit(error.isUsage ? 2 : 1)
        }
    }
}

/// How a role failed: usage errors exit 2, runtime errors 1.
enum BenchError: Error, CustomStringConvertible {
    case usage(String)
    case runtime(String)

    var description: String {
        switch self {
        case .usage(let text): "usage: \(text)"
        case .runtime(let text): text
        }
    }

    var isUsage: Bool {
        if case .usage = self { return true }
        return false
    }
}

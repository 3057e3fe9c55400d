// SPDX-License-Identifier: MIT
import Foundation
import SwiftMoQ

@main
enum SwiftMoQCommand {
    static let usage = """
        usage: swiftmoq <command> [options]

        Media over QUIC (moq-lite-06) from the command line.

        commands:
          publish           capture, encode and publish (camera, screen, mic, file, test pattern)
          play              play a broadcast to a window, a file, or headless
          screen-share      publish an X11 screen, tuned for text
          demo              publish and play back a test pattern through a relay, with stats
          announced         print broadcasts announced under a prefix
          publish-track     publish each line of standard input as a frame
          subscribe-track   print the frames of a track
          relay             run a relay (the embedded default for local use and tests)
          version           print the version and protocol

        Run 'swiftmoq <command> --help' for a command's options.
        """

    static func main() async {
        // A parent (e.g. Foundation's Process) may hand us SIGINT/SIGTERM blocked: unblock them.
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, SIGINT)
        sigaddset(&mask, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        var argv = Array(CommandLine.arguments.dropFirst())
        guard let command = argv.first else {
            Output.error("a command is required\n\n" + usage)
            exit(2)
        }
        argv.removeFirst()
        let commands: [String: (usage: String, run: ([String]) async throws(CommandError) -> Void)] = [
            "announced": (AnnouncedCommand.usage, AnnouncedCommand.run),
            "publish-track": (PublishTrackCommand.usage, PublishTrackCommand.run),
            "subscribe-track": (SubscribeTrackCommand.usage, SubscribeTrackCommand.run),
            "relay": (RelayCommand.usage, RelayCommand.run),
            "publish": (PublishCommand.usage, PublishCommand.run),
            "play": (PlayCommand.usage, PlayCommand.run),
            "screen-share": (ScreenShareCommand.usage, ScreenShareCommand.run),
            "demo": (DemoCommand.usage, DemoCommand.run),
        ]
        switch command {
        case "-h", "--help", "help":
            print(usage)
            exit(0)
        case "version", "--version":
            print("swiftmoq 0.1.0 (moq-lite-06 over raw QUIC)")
            exit(0)
        default:
            break
        }
        guard let entry = commands[command] else {
            Output.error("unknown command '\(command)'\n\n" + usage)
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
            switch error {
            case .usage(let text):
                Output.error(text + "\n\n" + entry.usage)
                exit(2)
            case .runtime(let text):
                Output.error(text)
                exit(1)
            }
        }
    }
}

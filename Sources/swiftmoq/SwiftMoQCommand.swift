// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
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
        let argv = Array(CommandLine.arguments.dropFirst())
        switch argv.first {
        case "-h", "--help", "help":
            print(usage)
            exit(0)
        case "version", "--version":
            print("swiftmoq 0.1.0 (moq-lite-06 over raw QUIC)")
            exit(0)
        default:
            break
        }
        let commands: [String: Subcommand] = [
            "announced": Subcommand(usage: AnnouncedCommand.usage, run: AnnouncedCommand.run),
            "publish-track": Subcommand(usage: PublishTrackCommand.usage, run: PublishTrackCommand.run),
            "subscribe-track": Subcommand(usage: SubscribeTrackCommand.usage, run: SubscribeTrackCommand.run),
            "relay": Subcommand(usage: RelayCommand.usage, run: RelayCommand.run),
            "publish": Subcommand(usage: PublishCommand.usage, run: PublishCommand.run),
            "play": Subcommand(usage: PlayCommand.usage, run: PlayCommand.run),
            "screen-share": Subcommand(usage: ScreenShareCommand.usage, run: ScreenShareCommand.run),
            "demo": Subcommand(usage: DemoCommand.usage, run: DemoCommand.run),
        ]
        switch await Subcommands.dispatch(argv, among: commands) {
        case .missing:
            Output.error("a command is required\n\n" + usage)
            exit(2)
        case .unknown(let command):
            Output.error("unknown command '\(command)'\n\n" + usage)
            exit(2)
        case .help(let command):
            print(command.usage)
            exit(0)
        case .completed:
            exit(0)
        case .failed(let command, let failure):
            Output.error(failure.isUsage ? failure.description + "\n\n" + command.usage : failure.description)
            exit(failure.exitCode)
        }
    }
}

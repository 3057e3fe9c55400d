// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import MoqKit

/// `swiftmoq screen-share`: publishes an X11 display, tuned for text and motion.
enum ScreenShareCommand {
    static let usage = """
        usage: swiftmoq screen-share --url URL --broadcast B [--display :0] [--mic] [options]

        Shares an X11 screen (and optionally the microphone) with settings chosen for screens:
        H.264 at the display's own size, 15 fps, 2.5 Mbit/s, a keyframe every 2 s, and x264's
        stillimage tuning so that text stays sharp (see README, "Screen sharing").

        \(ClientFlags.help)
          --broadcast B             broadcast path
          --display D               the X display (default $DISPLAY, else :0)
          --mic                     also publish the microphone
          --duration S              stop after S seconds
        \(EncoderFlags.help(defaults))

        example:
          swiftmoq screen-share --url moql://localhost:4443/anon --tls-fingerprint $FP --broadcast me/screen
        """

    /// The screen-share defaults (README explains each).
    static let defaults = VideoEncoderConfig(
        width: 0, height: 0, bitrate: 2_500_000, keyframeInterval: .seconds(2), maxFrameRate: 15, contentHint: .detail)

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv, options: PublishCommand.options.union(["display"]), flags: ClientFlags.flags.union(["mic"]))
        } catch { throw .usage(error.description) }
        let display = args.value("display") ?? ProcessInfoDisplay.current ?? ":0"
        var sources = [try SourceSpec("screen:\(display)")]
        if args.has("mic") { sources.append(.mic(.automatic)) }
        try await PublishCommand.publish(args, sources: sources, encoders: try EncoderFlags(args, defaults: defaults))
    }
}

/// `$DISPLAY`.
enum ProcessInfoDisplay {
    static var current: String? { getenv("DISPLAY").map { String(cString: $0) } }
}

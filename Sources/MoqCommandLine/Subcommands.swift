// SPDX-License-Identifier: MIT

/// One subcommand of a tool: its help and what runs it.
public struct Subcommand: Sendable {
    /// The help printed for `--help` and after a usage error.
    public let usage: String
    /// Runs the subcommand with the arguments after its name.
    public let run: @Sendable ([String]) async throws(CommandFailure) -> Void

    public init(usage: String, run: @escaping @Sendable ([String]) async throws(CommandFailure) -> Void) {
        self.usage = usage
        self.run = run
    }
}

/// The dispatch `swiftmoq` and `moqbench` share: the first argument names a subcommand,
/// `--help` anywhere after it prints the subcommand's help.
public enum Subcommands {
    /// What dispatching decided, for the tool to report in its own way.
    public enum Outcome {
        /// No subcommand was named.
        case missing
        /// The first argument names no subcommand.
        case unknown(String)
        /// The subcommand's help was asked for.
        case help(Subcommand)
        /// The subcommand ran to completion.
        case completed
        /// The subcommand failed.
        case failed(Subcommand, CommandFailure)
    }

    /// Finds and runs the subcommand named by `argv[0]`.
    public static func dispatch(_ argv: [String], among commands: [String: Subcommand]) async -> Outcome {
        guard let name = argv.first else { return .missing }
        guard let command = commands[name] else { return .unknown(name) }
        let rest = Array(argv.dropFirst())
        if rest.contains("--help") || rest.contains("-h") { return .help(command) }
        do {
            try await command.run(rest)
            return .completed
        } catch {
            return .failed(command, error)
        }
    }
}

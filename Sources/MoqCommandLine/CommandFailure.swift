// SPDX-License-Identifier: MIT

/// How a command failed: a usage error exits 2 (and shows the command's help), anything else 1.
public enum CommandFailure: Error, CustomStringConvertible {
    /// The command line was wrong.
    case usage(String)
    /// The command ran and failed.
    case runtime(String)

    public var description: String {
        switch self {
        case .usage(let text), .runtime(let text): text
        }
    }

    /// Whether this is a usage error.
    public var isUsage: Bool {
        if case .usage = self { return true }
        return false
    }

    /// The process exit code for this failure.
    public var exitCode: Int32 { isUsage ? 2 : 1 }
}

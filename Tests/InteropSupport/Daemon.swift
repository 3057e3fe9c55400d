// SPDX-License-Identifier: MIT
import Foundation

/// A helper server for a test (Xvfb, dbus-daemon) that prints where to reach it as its first line
/// of standard output; killed when this object goes.
package final class Daemon: @unchecked Sendable {  // `process` is only read after init
    private let process = Process()
    /// The first line the daemon printed, trimmed (a display number, a bus address).
    package let firstLine: String

    /// Starts `executable` and waits, off the cooperative pool, for its first line.
    /// - Throws: when it cannot start, or when it exits before printing a line.
    package init(_ executable: String, _ arguments: [String]) async throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let name = URL(fileURLWithPath: executable).lastPathComponent
        firstLine = try await offThePool {
            var text = ""
            while !text.contains("\n") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { throw DaemonError.exitedEarly(name) }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    deinit {
        // Foundation's Process starts children with SIGTERM blocked, which these daemons never unblock.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// Why a ``Daemon`` did not start.
package enum DaemonError: Error, CustomStringConvertible {
    case exitedEarly(String)

    package var description: String {
        switch self {
        case .exitedEarly(let name): "\(name) exited before printing where to reach it"
        }
    }
}

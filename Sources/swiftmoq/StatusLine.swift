// SPDX-License-Identifier: MIT
import Foundation

/// A one-line live status on a terminal (rewritten in place about once a second); quiet when
/// standard error is not a terminal, unless verbose, where each update is its own line.
enum StatusLine {
    static let isTerminal = isatty(STDERR_FILENO) != 0

    static func update(_ text: String) {
        if isTerminal {
            FileHandle.standardError.write(Data(("\r\u{1b}[2K" + text).utf8))
        } else if Output.verbose {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }
    }

    /// Ends the live line (a newline on a terminal).
    static func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func rate(_ bps: Double) -> String {
        bps >= 1_000_000 ? String(format: "%.2f Mbit/s", bps / 1_000_000) : String(format: "%.0f kbit/s", bps / 1000)
    }

    static func ms(_ d: Duration?) -> String {
        guard let d else { return "–" }
        return String(format: "%.0f ms", Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
    }
}

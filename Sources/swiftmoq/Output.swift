// SPDX-License-Identifier: MIT
import Foundation
import MoqCatalog

/// Line output that is flushed at once (tests and pipes read it as it comes).
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func raw(_ bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
    }

    /// One line on stderr.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("swiftmoq: " + text + "\n").utf8))
    }

    /// A line on stderr the user should see whatever the verbosity (what the command does that
    /// they may not expect).
    static func notice(_ text: String) {
        FileHandle.standardError.write(Data(("swiftmoq: " + text + "\n").utf8))
    }

    /// Informational logging on stderr when verbose.
    nonisolated(unsafe) static var verbose = false

    static func info(_ text: String) {
        if verbose { FileHandle.standardError.write(Data(("swiftmoq: " + text + "\n").utf8)) }
    }
}

extension String {
    /// JSON string literal with escapes (the catalog's JSON writer).
    var jsonQuoted: String { JSONValue.string(self).jsonString }
}

// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqSync
import SwiftMoQ

/// Process-wide native logging, as moq-kit's `KitLogger.setNativeLogLevel`: MoqKit's own lines
/// (session state, reconnections, failures) on standard error, and the GStreamer debug categories
/// of the `moqsrc` and `moqsink` elements its players and publishers run, at one level. Off until
/// set; only the first valid call takes effect (as moq-kit's), so a library cannot override the
/// application's choice.
public enum KitLogger {
    /// moq-kit's level names.
    public enum Level: String, Sendable, CaseIterable, Comparable {
        case error, warn, info, debug, trace

        public static func < (a: Level, b: Level) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }

        var gstreamer: GStreamer.DebugLevel {
            switch self {
            case .error: .error
            case .warn: .warning
            case .info: .info
            case .debug: .debug
            case .trace: .trace
            }
        }
    }

    private static let level = Lock<Level?>(nil)

    /// The level set, or nil while native logging is off.
    public static var nativeLogLevel: Level? { level.withLock { $0 } }

    /// Sets the native log level: `"error"`, `"warn"`, `"info"`, `"debug"` or `"trace"`. Only the
    /// first valid call takes effect; an unknown name is ignored with a warning on standard error.
    /// - Returns: whether this call set the level.
    @discardableResult
    public static func setNativeLogLevel(_ name: String) -> Bool {
        guard let wanted = Level(rawValue: name.lowercased()) else {
            MoqLogger.standardError(level: .warning, label: "moqkit").warning(
                "KitLogger.setNativeLogLevel(\"\(name)\") ignored: use error, warn, info, debug or trace")
            return false
        }
        let first = level.withLock { l -> Bool in
            guard l == nil else { return false }
            l = wanted
            return true
        }
        guard first else { return false }
        GStreamer.setDebugThreshold(wanted.gstreamer, categories: elementCategories)
        return true
    }

    /// The debug categories of the elements MoqKit runs.
    static let elementCategories = ["moqsrc", "moqsink"]

    /// Writes a line when native logging is on at `at` or more detail.
    static func log(_ at: Level, _ category: String, _ text: @autoclosure () -> String) {
        guard let current = nativeLogLevel, at <= current else { return }
        let level: LogLevel =
            switch at {
            case .error: .error
            case .warn: .warning
            case .info: .info
            case .debug, .trace: .debug
            }
        MoqLogger.standardError(level: .debug, label: "moqkit.\(category)").log(level, text())
    }
}

// SPDX-License-Identifier: MIT
#if canImport(Glibc)
    import Glibc
#endif

/// Severity of a log line.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    /// Parses `debug`, `info`, `warning`/`warn`, `error`.
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }
}

/// Where SwiftMoQ components write their log lines.
public struct MoqLogger: Sendable {
    /// Lines below this level are dropped.
    public var level: LogLevel
    private let sink: @Sendable (LogLevel, String) -> Void

    public init(level: LogLevel = .info, sink: @escaping @Sendable (LogLevel, String) -> Void) {
        self.level = level
        self.sink = sink
    }

    /// Timestamped lines on standard error.
    public static func standardError(level: LogLevel = .info, label: String = "swiftmoq") -> MoqLogger {
        MoqLogger(level: level) { lvl, text in
            let line = Array("\(timestamp()) \(lvl) \(label): \(text)\n".utf8)
            line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
        }
    }

    /// UTC time with milliseconds, ISO 8601 (without Foundation, which the plugin avoids).
    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = ts.tv_sec
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(ts.tv_nsec / 1_000_000), 3))Z"
    }

    /// Discards everything.
    public static let silent = MoqLogger(level: .error) { _, _ in }

    public func log(_ lvl: LogLevel, _ text: @autoclosure () -> String) {
        if lvl >= level { sink(lvl, text()) }
    }
    public func debug(_ text: @autoclosure () -> String) { log(.debug, text()) }
    public func info(_ text: @autoclosure () -> String) { log(.info, text()) }
    public func warning(_ text: @autoclosure () -> String) { log(.warning, text()) }
    public func error(_ text: @autoclosure () -> String) { log(.error, text()) }
}

extension LogLevel: CustomStringConvertible {
    public var description: String {
        switch self {
        case .debug: "DEBUG"
        case .info: "INFO"
        case .warning: "WARN"
        case .error: "ERROR"
        }
    }
}

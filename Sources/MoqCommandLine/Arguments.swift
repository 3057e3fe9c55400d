// SPDX-License-Identifier: MIT

/// A minimal `--flag value` / `--flag=value` / `--switch` parser (no outside packages), shared by
/// `swiftmoq` and `moqbench`. Every mistake is a ``CommandFailure/usage(_:)``.
public struct Arguments: Sendable {
    private var values: [String: [String]] = [:]
    private var switches: Set<String> = []
    /// Arguments that are not options, in order.
    public private(set) var positional: [String] = []

    /// - Parameters:
    ///   - options: flags that take a value.
    ///   - flags: flags without a value.
    public init(_ args: [String], options: Set<String>, flags: Set<String>) throws(CommandFailure) {
        var i = 0
        while i < args.count {
            let arg = args[i]
            i += 1
            guard arg.hasPrefix("--") else {
                positional.append(arg)
                continue
            }
            var name = String(arg.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if flags.contains(name) {
                guard inline == nil else { throw .usage("--\(name) takes no value") }
                switches.insert(name)
            } else if options.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else {
                    guard i < args.count else { throw .usage("--\(name) needs a value") }
                    values[name, default: []].append(args[i])
                    i += 1
                }
            } else {
                throw .usage("unknown option --\(name)")
            }
        }
    }

    /// Whether the switch `--flag` was given.
    public func has(_ flag: String) -> Bool { switches.contains(flag) }
    /// The value of `--name` (the last, when repeated).
    public func value(_ name: String) -> String? { values[name]?.last }
    /// Every value of a repeated `--name`, in order.
    public func all(_ name: String) -> [String] { values[name] ?? [] }

    /// The value of `--name`, which must be given and not be empty.
    public func required(_ name: String) throws(CommandFailure) -> String {
        guard let v = value(name), !v.isEmpty else { throw .usage("--\(name) is required") }
        return v
    }

    /// An integer option.
    public func integer<T: FixedWidthInteger>(_ name: String, default fallback: T) throws(CommandFailure) -> T {
        guard let text = value(name) else { return fallback }
        guard let v = T(text) else { throw .usage("--\(name) must be a number (got '\(text)')") }
        return v
    }

    /// An integer option without a default.
    public func optionalInteger<T: FixedWidthInteger>(_ name: String) throws(CommandFailure) -> T? {
        guard let text = value(name) else { return nil }
        guard let v = T(text) else { throw .usage("--\(name) must be a number (got '\(text)')") }
        return v
    }

    /// A number of seconds (fractions allowed), as a duration.
    public func seconds(_ name: String, default fallback: Duration) throws(CommandFailure) -> Duration {
        guard let text = value(name) else { return fallback }
        guard let v = Double(text), v >= 0 else {
            throw .usage("--\(name) must be a number of seconds (got '\(text)')")
        }
        return .milliseconds(Int64(v * 1000))
    }

    /// A finite number option (seconds, rates).
    public func double(_ name: String, default fallback: Double) throws(CommandFailure) -> Double {
        guard let text = value(name) else { return fallback }
        guard let v = Double(text), v.isFinite else { throw .usage("--\(name) must be a number (got '\(text)')") }
        return v
    }
}

// SPDX-License-Identifier: MIT

/// A usage error: printed with the command's help, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A minimal `--flag value` / `--flag=value` / `--switch` parser (no outside packages).
struct Arguments {
    private var values: [String: [String]] = [:]
    private var switches: Set<String> = []
    private(set) var positional: [String] = []

    /// - Parameters:
    ///   - options: flags that take a value.
    ///   - flags: flags without a value.
    init(_ args: [String], options: Set<String>, flags: Set<String>) throws(UsageError) {
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
                guard inline == nil else { throw UsageError("--\(name) takes no value") }
                switches.insert(name)
            } else if options.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else {
                    guard i < args.count else { throw UsageError("--\(name) needs a value") }
                    values[name, default: []].append(args[i])
                    i += 1
                }
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    func has(_ flag: String) -> Bool { switches.contains(flag) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }

    func required(_ name: String) throws(UsageError) -> String {
        guard let v = value(name), !v.isEmpty else { throw UsageError("--\(name) is required") }
        return v
    }

    func integer<T: FixedWidthInteger>(_ name: String, default fallback: T) throws(UsageError) -> T {
        guard let text = value(name) else { return fallback }
        guard let v = T(text) else { throw UsageError("--\(name) must be a number (got '\(text)')") }
        return v
    }

    func optionalInteger<T: FixedWidthInteger>(_ name: String) throws(UsageError) -> T? {
        guard let text = value(name) else { return nil }
        guard let v = T(text) else { throw UsageError("--\(name) must be a number (got '\(text)')") }
        return v
    }

    func seconds(_ name: String, default fallback: Duration) throws(UsageError) -> Duration {
        guard let text = value(name) else { return fallback }
        guard let v = Double(text), v >= 0 else {
            throw UsageError("--\(name) must be a number of seconds (got '\(text)')")
        }
        return .milliseconds(Int64(v * 1000))
    }
}

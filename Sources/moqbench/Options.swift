// SPDX-License-Identifier: MIT

/// `--name value` options (every option takes a value; repeated options keep the last).
struct Options {
    private var values: [String: String] = [:]

    /// Parses `argv`, accepting only `known` names.
    init(_ argv: [String], known: Set<String>) throws(BenchError) {
        var i = 0
        while i < argv.count {
            let arg = argv[i]
            guard arg.hasPrefix("--") else { throw .usage("unexpected argument '\(arg)'") }
            var name = String(arg.dropFirst(2))
            if let eq = name.firstIndex(of: "=") {
                values[String(name[..<eq])] = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
                i += 1
            } else {
                guard i + 1 < argv.count else { throw .usage("--\(name) needs a value") }
                values[name] = argv[i + 1]
                i += 2
            }
            guard known.contains(name) else { throw .usage("unknown option --\(name)") }
        }
    }

    /// The value of `--name`, if given.
    func string(_ name: String) -> String? { values[name] }

    /// The value of `--name`, which must be given.
    func required(_ name: String) throws(BenchError) -> String {
        guard let v = values[name], !v.isEmpty else { throw .usage("--\(name) is required") }
        return v
    }

    /// An integer option.
    func int(_ name: String, default fallback: Int) throws(BenchError) -> Int {
        guard let text = values[name] else { return fallback }
        guard let v = Int(text) else { throw .usage("--\(name) must be an integer (got '\(text)')") }
        return v
    }

    /// A number option (seconds, rates).
    func double(_ name: String, default fallback: Double) throws(BenchError) -> Double {
        guard let text = values[name] else { return fallback }
        guard let v = Double(text), v.isFinite else { throw .usage("--\(name) must be a number (got '\(text)')") }
        return v
    }
}

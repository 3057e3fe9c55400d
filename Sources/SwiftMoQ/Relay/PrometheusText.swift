// SPDX-License-Identifier: MIT

/// Prometheus' text exposition format (version 0.0.4): each metric family with its HELP and TYPE
/// lines, then its samples.
struct PrometheusText {
    /// A metric family's type.
    enum Kind: String {
        case counter, gauge
    }

    private(set) var text = ""

    /// Adds a family of samples (`labels` pairs in order; values printed as integers when whole).
    mutating func family(_ name: String, _ kind: Kind, _ help: String, _ samples: [([(String, String)], Double)]) {
        text += "# HELP \(name) \(help.replacing("\\", with: "\\\\").replacing("\n", with: "\\n"))\n"
        text += "# TYPE \(name) \(kind.rawValue)\n"
        for (labels, value) in samples {
            let set =
                labels.isEmpty
                ? "" : "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
            text += "\(name)\(set) \(Self.format(value))\n"
        }
    }

    /// One sample without labels.
    mutating func single(_ name: String, _ kind: Kind, _ help: String, _ value: Double) {
        family(name, kind, help, [([], value)])
    }

    static func escape(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

// SPDX-License-Identifier: MIT

/// How values are written in a gst-launch description. Two contexts differ:
///
/// - **Property values** (`name=value`). The parser strips one pair of surrounding double quotes,
///   removes backslash escapes, then deserialises for the property's type. A quoted value must not end
///   in a backslash (the lexer would read `\"` as an escaped quote and run on), and a string that
///   itself starts and ends with a quote, or is `NULL`, is read specially by GStreamer's string
///   deserialiser; such strings are wrapped once more at the GStreamer level.
/// - **Caps fields** (`! video/x-raw,format=I420 !`). The text goes to `gst_caps_from_string`
///   without unescaping. A bare word that looks like a number, a boolean, `inf`/`nan` or a flag set
///   would change type, so such strings are written `(string)"…"`, with `\`, `"`, `!` and `;` escaped.
///
/// Both rules are checked against the real parser in `Tests/MoqPipelineTests`.
enum ValueRendering {
    // MARK: Property values

    /// The text after `name=`.
    static func property(_ value: PipelineValue) -> String {
        switch value {
        case .string(let s): propertyString(s)
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .uint(let u): String(u)
        case .double(let d): number(d)
        case .fraction(let f): f.description
        case .nick(let n): propertyString(n)
        case .flags(let nicks): propertyString(nicks.joined(separator: "+"))
        case .caps(let c): propertyString(c.description)
        case .list, .range: propertyString(caps(value))
        case .structure(let s): propertyString(s.serialized)
        }
    }

    /// Characters that never need quoting in a property value.
    private static func isPropertySafe(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "a"..."z", "A"..."Z", "0"..."9": true
        case "_", "-", ".", "/", ":", "+", "@", "%", "=", "?", "&", "~", "#": true
        default: false
        }
    }

    /// A string property value: bare when safe, otherwise double-quoted with `\` and `"` escaped.
    static func propertyString(_ s: String) -> String {
        if !s.isEmpty, s != "NULL", s.unicodeScalars.allSatisfy(isPropertySafe) { return s }
        // GStreamer reads `NULL` as a null string and unwraps "…"; a trailing backslash would escape
        // the closing quote. Wrapping at the GStreamer level sidesteps all three.
        let special = s == "NULL" || s.hasSuffix("\\") || (s.hasPrefix("\"") && s.hasSuffix("\""))
        let content = special ? "\"\(escaped(s))\"" : s
        return "\"\(escaped(content))\""
    }

    /// `\` → `\\`, `"` → `\"`.
    private static func escaped(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count + 2)
        for c in s.unicodeScalars {
            if c == "\\" || c == "\"" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(c)
        }
        return out
    }

    /// Doubles in the shortest form that reads back exactly (`0.5`, `2.0`, `1e-07`, `inf`).
    static func number(_ d: Double) -> String { d.description }

    // MARK: Caps fields

    /// The text after `field=` in a caps string.
    static func caps(_ value: PipelineValue) -> String {
        switch value {
        case .string(let s): capsString(s)
        case .bool(let b): b ? "true" : "false"
        case .int(let i): Int32(exactly: i) != nil ? String(i) : "(gint64)\(i)"
        case .uint(let u): u <= UInt64(UInt32.max) ? "(uint)\(u)" : "(guint64)\(u)"
        case .double(let d): number(d)
        case .fraction(let f): f.description
        case .nick(let n): capsString(n)
        case .flags(let nicks): nicks.joined(separator: "+")
        case .caps(let c): "(GstCaps)\(capsQuoted(c.description))"
        case .list(let items): "{\(items.map(caps).joined(separator: ","))}"
        case .range(let low, let high): "[\(caps(low)),\(caps(high))]"
        case .structure(let s): "(GstStructure)\(capsQuoted(s.serialized))"
        }
    }

    /// Words GStreamer's untyped caps parser reads as booleans or doubles (and `NULL`, a null string).
    private static let reservedWords: Set<String> = ["true", "false", "yes", "no", "t", "f", "inf", "infinity", "nan"]

    /// A caps string value: bare when it can only be read as a string, otherwise `(string)"…"`.
    static func capsString(_ s: String) -> String {
        let scalars = s.unicodeScalars
        let bare =
            scalars.first.map { ("a"..."z").contains($0) || ("A"..."Z").contains($0) } == true
            && scalars.allSatisfy { c in
                switch c {
                case "a"..."z", "A"..."Z", "0"..."9", "_", "-", ".", "/": true
                default: false
                }
            }
            && !reservedWords.contains(s.lowercased()) && s != "NULL"
        return bare ? s : "(string)\(capsQuoted(s))"
    }

    /// `"…"` with `\`, `"`, `!` and `;` escaped (the last two end a caps token in a description).
    private static func capsQuoted(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            if c == "\\" || c == "\"" || c == "!" || c == ";" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(c)
        }
        return out + "\""
    }
}

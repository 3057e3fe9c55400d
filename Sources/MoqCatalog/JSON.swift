// SPDX-License-Identifier: MIT

/// A JSON value exactly as it was received, so that parts of a catalog this
/// build does not understand can be republished unchanged.
///
/// Objects keep their keys in order (duplicates included) and numbers keep their
/// text, so `2^64 − 1` or `30.0` come back out exactly as they went in. A small
/// bounded parser is used instead of Foundation's `JSONSerialization`, which
/// loses key order, turns big integers into doubles and cannot bound nesting.
public indirect enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, with its original text.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, keys in received order.
    case object(JSONObject)

    /// The JSON type name, for error messages ("object", "string", …).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// A JSON number kept as its text (always a valid, finite JSON number).
public struct JSONNumber: Sendable, Equatable, CustomStringConvertible {
    /// The number as written, e.g. `30.0`, `-1`, `1e3`.
    public let text: String

    /// Creates a number from valid JSON number text (checked by the parser only).
    init(text: String) { self.text = text }

    /// An integer.
    public init(_ value: UInt64) { text = String(value) }

    /// A finite double, or nil for NaN and infinities (JSON cannot carry them).
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        text = "\(value)"
    }

    /// The value as a double (possibly rounded).
    public var doubleValue: Double { Double(text) ?? .nan }

    /// The value when the text is a non-negative integer without fraction or
    /// exponent that fits in 64 bits, as serde requires for integer fields.
    public var uint64Value: UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return UInt64(text)
    }

    /// The number as written.
    public var description: String { text }
}

/// A JSON object: key/value pairs in received order.
public struct JSONObject: Sendable, Equatable, Sequence {
    /// The members, in order. Duplicate keys are kept as received.
    public var entries: [(key: String, value: JSONValue)]

    /// An empty object.
    public init() { entries = [] }

    /// An object with `entries`, in that order.
    public init(_ entries: [(key: String, value: JSONValue)]) { self.entries = entries }

    /// True when the object has no members.
    public var isEmpty: Bool { entries.isEmpty }

    /// The value of the last member named `key` (as JavaScript's `JSON.parse` would keep).
    public subscript(key: String) -> JSONValue? {
        get { entries.last(where: { $0.key == key })?.value }
        set {
            entries.removeAll { $0.key == key }
            if let newValue { entries.append((key, newValue)) }
        }
    }

    /// Iterates the members in order.
    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        entries.makeIterator()
    }

    /// Same members in the same order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

// MARK: - Parsing

/// A bounded JSON parser (RFC 8259) over UTF-8 bytes.
///
/// Rejects: more than `maxDepth` nested arrays/objects, invalid UTF-8, lone
/// surrogates, control characters in strings, numbers that overflow a double
/// (`1e999`), and anything after the top-level value.
struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private let maxDepth: Int
    /// Where the parser is (keys and indices from the root), rendered only for an error:
    /// building a path string per value would cost O(values × path length).
    private var path: [PathStep] = []

    private enum PathStep {
        case key(String)
        case index(Int)
    }

    /// The current position as `$.video.renditions["0.avc1"]`.
    private var renderedPath: String {
        var out = "$"
        for step in path {
            switch step {
            case .key(let key): out = CatalogError.path(out, key)
            case .index(let i): out += "[\(i)]"
            }
        }
        return out
    }

    init(_ bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses one complete JSON document.
    static func parse(_ bytes: [UInt8], maxDepth: Int) throws(CatalogError) -> JSONValue {
        var parser = JSONParser(bytes, maxDepth: maxDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.malformed("unexpected data after the JSON value") }
        return value
    }

    private func malformed(_ reason: String) -> CatalogError {
        .malformedJSON(offset: index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0a, 0x0d: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(CatalogError) -> JSONValue {
        guard index < bytes.count else { throw malformed("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            guard depth < maxDepth else { throw .tooDeep(limit: maxDepth) }
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < maxDepth else { throw .tooDeep(limit: maxDepth) }
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw malformed("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(CatalogError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw malformed("unexpected end of input") }
        let start = literal.utf8Start
        for i in 0..<count where bytes[index + i] != start[i] {
            throw malformed("invalid literal")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(CatalogError) -> JSONValue {
        index += 1  // {
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw malformed("expected a key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw malformed("expected ':'") }
            index += 1
            skipWhitespace()
            path.append(.key(key))
            let value = try parseValue(depth: depth)
            path.removeLast()
            object.entries.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw malformed("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw malformed("expected ',' or '}'") }
            index += 1
            return .object(object)
        }
    }

    private mutating func parseArray(depth: Int) throws(CatalogError) -> JSONValue {
        index += 1  // [
        var array: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(array)
        }
        while true {
            skipWhitespace()
            path.append(.index(array.count))
            array.append(try parseValue(depth: depth))
            path.removeLast()
            skipWhitespace()
            guard index < bytes.count else { throw malformed("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw malformed("expected ',' or ']'") }
            index += 1
            return .array(array)
        }
    }

    private mutating func parseNumber() throws(CatalogError) -> JSONNumber {
        let start = index
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.index
            while p.index < p.bytes.count, p.bytes[p.index] >= UInt8(ascii: "0"), p.bytes[p.index] <= UInt8(ascii: "9")
            {
                p.index += 1
            }
            return p.index - s
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw malformed("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits(&self) > 0 else { throw malformed("invalid number") }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw malformed("invalid number") }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard digits(&self) > 0 else { throw malformed("invalid number") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw .nonFiniteNumber(path: renderedPath) }
        return JSONNumber(text: text)
    }

    private mutating func parseString() throws(CatalogError) -> String {
        index += 1  // opening quote
        // Fast path: no escapes.
        let start = index
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let slice = bytes[start..<index]
                index += 1
                guard let s = String(validating: slice, as: UTF8.self) else { throw malformed("invalid UTF-8") }
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            guard b >= 0x20 else { throw malformed("control character in string") }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw malformed("invalid UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw malformed("unexpected end of input") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xd800..<0xdc00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw malformed("lone surrogate in \\u escape") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xdc00..<0xe000).contains(low) else { throw malformed("lone surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                    } else if (0xdc00..<0xe000).contains(scalar) {
                        throw malformed("lone surrogate in \\u escape")
                    }
                    out.append(contentsOf: Array(String(Unicode.Scalar(scalar)!).utf8))
                default:
                    throw malformed("invalid escape")
                }
            default:
                guard b >= 0x20 else { throw malformed("control character in string") }
                out.append(b)
                index += 1
            }
        }
        throw malformed("unterminated string")
    }

    private mutating func parseHex4() throws(CatalogError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw malformed("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            default: throw malformed("invalid \\u escape")
            }
            value = value << 4 | UInt32(v)
            index += 1
        }
        return value
    }
}

// MARK: - Writing

/// Compact JSON output (no whitespace), escaping like serde_json.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    mutating func raw(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }

    mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0a: raw("\\n")
            case 0x0d: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0c: raw("\\f")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                raw("\\u00")
                bytes.append(hex[Int(b >> 4)])
                bytes.append(hex[Int(b & 0xf)])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func value(_ v: JSONValue) {
        switch v {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .number(let n): raw(n.text)
        case .string(let s): string(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in a.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            var object = ObjectWriter(&self)
            for (k, element) in o.entries { object.member(k, element, into: &self) }
            object.close(into: &self)
        }
    }
}

/// Writes `{ "k": v, … }` one member at a time.
struct ObjectWriter {
    private var first = true

    init(_ writer: inout JSONWriter) { writer.raw("{") }

    mutating func key(_ key: String, into writer: inout JSONWriter) {
        if !first { writer.raw(",") }
        first = false
        writer.string(key)
        writer.raw(":")
    }

    mutating func member(_ key: String, _ value: JSONValue, into writer: inout JSONWriter) {
        self.key(key, into: &writer)
        writer.value(value)
    }

    func close(into writer: inout JSONWriter) { writer.raw("}") }
}

extension JSONValue {
    /// Compact JSON text for this value.
    public var jsonString: String {
        var writer = JSONWriter()
        writer.value(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Parses a JSON document (bounded by `limits`).
    public init(parsing bytes: some Collection<UInt8>, limits: CatalogLimits = .default) throws(CatalogError) {
        guard bytes.count <= limits.maxBytes else { throw .tooLarge(size: bytes.count, limit: limits.maxBytes) }
        self = try JSONParser.parse(Array(bytes), maxDepth: limits.maxDepth)
    }
}

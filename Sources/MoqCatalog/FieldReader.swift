// SPDX-License-Identifier: MIT
import MoqWire

/// Reads the known fields of one JSON object with typed errors, remembering
/// which keys were used so the rest can be kept verbatim.
struct FieldReader {
    let path: String
    private let object: JSONObject
    private var used: Set<String> = []

    init(_ value: JSONValue, path: String) throws(CatalogError) {
        guard case .object(let object) = value else {
            throw .wrongType(path: path, expected: "object", found: value.typeName)
        }
        self.object = object
        self.path = path
    }

    /// The raw value of the first of `keys` present (later keys are aliases), or nil
    /// when absent. Two occurrences, or a key and its alias, are a duplicate.
    mutating func raw(_ keys: String...) throws(CatalogError) -> (key: String, value: JSONValue)? {
        try raw(keys)
    }

    mutating func raw(_ keys: [String]) throws(CatalogError) -> (key: String, value: JSONValue)? {
        var found: (key: String, value: JSONValue)?
        for key in keys {
            used.insert(key)
            for entry in object.entries where entry.key == key {
                if found != nil { throw .duplicateField(path: CatalogError.path(path, key)) }
                found = entry
            }
        }
        return found
    }

    /// Unused members, in received order.
    var extra: JSONObject {
        JSONObject(object.entries.filter { !used.contains($0.key) })
    }

    func fieldPath(_ key: String) -> String { CatalogError.path(path, key) }

    // MARK: Typed accessors. `null` reads as absent for optional fields, as serde does.

    mutating func string(_ key: String) throws(CatalogError) -> String {
        guard let s = try optionalString(key) else { throw .missingField(path: fieldPath(key)) }
        return s
    }

    mutating func optionalString(_ key: String) throws(CatalogError) -> String? {
        guard let (k, value) = try raw(key) else { return nil }
        switch value {
        case .null: return nil
        case .string(let s): return s
        default: throw .wrongType(path: fieldPath(k), expected: "string", found: value.typeName)
        }
    }

    mutating func uint32(_ key: String) throws(CatalogError) -> UInt32 {
        guard let v = try optionalUInt32(key) else { throw .missingField(path: fieldPath(key)) }
        return v
    }

    mutating func optionalUInt32(_ keys: String...) throws(CatalogError) -> UInt32? {
        guard let v = try integer(keys, max: UInt64(UInt32.max)) else { return nil }
        return UInt32(v)
    }

    mutating func optionalUInt64(_ key: String) throws(CatalogError) -> UInt64? {
        try integer([key], max: .max)
    }

    private mutating func integer(_ keys: [String], max: UInt64) throws(CatalogError) -> UInt64? {
        guard let (k, value) = try raw(keys) else { return nil }
        switch value {
        case .null: return nil
        case .number(let n):
            guard let v = n.uint64Value else {
                throw .invalidValue(path: fieldPath(k), reason: "expected a non-negative integer, found \(n.text)")
            }
            guard v <= max else { throw .invalidValue(path: fieldPath(k), reason: "\(v) exceeds \(max)") }
            return v
        default: throw .wrongType(path: fieldPath(k), expected: "integer", found: value.typeName)
        }
    }

    mutating func optionalDouble(_ key: String) throws(CatalogError) -> Double? {
        guard let (k, value) = try raw(key) else { return nil }
        switch value {
        case .null: return nil
        case .number(let n): return n.doubleValue
        default: throw .wrongType(path: fieldPath(k), expected: "number", found: value.typeName)
        }
    }

    mutating func optionalBool(_ key: String) throws(CatalogError) -> Bool? {
        guard let (k, value) = try raw(key) else { return nil }
        switch value {
        case .null: return nil
        case .bool(let b): return b
        default: throw .wrongType(path: fieldPath(k), expected: "boolean", found: value.typeName)
        }
    }

    /// A lowercase or uppercase hex string (no separators), as the Rust `hex` crate accepts.
    mutating func optionalHex(_ key: String) throws(CatalogError) -> Bytes? {
        guard let text = try optionalString(key) else { return nil }
        guard let bytes = Hex.decode(text) else {
            throw .invalidValue(path: fieldPath(key), reason: "expected an even number of hex digits")
        }
        return Bytes(bytes)
    }
}

/// RFC 4648 base64 with padding (the catalog's CMAF `init` encoding, serde_with's default).
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: Bytes) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        bytes.withUnsafeBytes { b in
            var i = 0
            while i + 3 <= b.count {
                let n = UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2])
                for shift in [18, 12, 6, 0] { out.append(alphabet[Int(n >> UInt32(shift) & 63)]) }
                i += 3
            }
            let rest = b.count - i
            if rest > 0 {
                let n = UInt32(b[i]) << 16 | (rest == 2 ? UInt32(b[i + 1]) << 8 : 0)
                out.append(alphabet[Int(n >> 18 & 63)])
                out.append(alphabet[Int(n >> 12 & 63)])
                out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
                out.append(UInt8(ascii: "="))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 4 * 3)
        var i = 0
        while i < utf8.count {
            var n: UInt32 = 0
            var padding = 0
            for j in 0..<4 {
                let c = utf8[i + j]
                let v: UInt32
                switch c {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
                case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a")) + 26
                case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0")) + 52
                case UInt8(ascii: "+"): v = 62
                case UInt8(ascii: "/"): v = 63
                case UInt8(ascii: "="):
                    // Padding only in the last quantum, only in the last two positions.
                    guard i + 4 == utf8.count, j >= 2 else { return nil }
                    padding += 1
                    v = 0
                default: return nil
                }
                if padding > 0 && c != UInt8(ascii: "=") { return nil }
                n = n << 6 | v
            }
            // Canonical encodings only: the bits under the padding must be zero.
            if padding == 2 && n & 0xffff != 0 || padding == 1 && n & 0xff != 0 { return nil }
            out.append(UInt8(n >> 16 & 0xff))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xff)) }
            if padding < 1 { out.append(UInt8(n & 0xff)) }
            i += 4
        }
        return out
    }
}

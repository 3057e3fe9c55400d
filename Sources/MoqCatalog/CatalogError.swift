// SPDX-License-Identifier: MIT

/// Bounds applied to every catalog decoded from the network.
public struct CatalogLimits: Sendable, Equatable {
    /// Largest catalog document accepted, in bytes.
    public var maxBytes: Int
    /// Deepest nesting of arrays and objects accepted.
    public var maxDepth: Int
    /// Most renditions accepted per section (`video`, `audio`); real catalogs hold a handful.
    public var maxRenditions: Int

    /// The limits used unless told otherwise: 1 MiB, depth 32, 256 renditions per section.
    public static let `default` = CatalogLimits(maxBytes: 1 << 20, maxDepth: 32, maxRenditions: 256)

    /// Custom limits.
    public init(maxBytes: Int, maxDepth: Int, maxRenditions: Int) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxRenditions = maxRenditions
    }
}

/// Why a catalog, or one rendition of it, could not be decoded.
///
/// Paths name the offending field in JavaScript notation, e.g.
/// `$.video.renditions["0.avc1"].codedWidth`.
public enum CatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The document is larger than ``CatalogLimits/maxBytes``.
    case tooLarge(size: Int, limit: Int)
    /// Arrays/objects nest deeper than ``CatalogLimits/maxDepth``.
    case tooDeep(limit: Int)
    /// More renditions in one section than ``CatalogLimits/maxRenditions``.
    case tooManyRenditions(path: String, limit: Int)
    /// Not JSON: what was wrong and the byte offset where it was found.
    case malformedJSON(offset: Int, reason: String)
    /// A number too large for a double (`1e999`); JSON has no NaN or infinity.
    case nonFiniteNumber(path: String)
    /// A field holds the wrong JSON type.
    case wrongType(path: String, expected: String, found: String)
    /// A required field is absent.
    case missingField(path: String)
    /// A field has the right type but an unacceptable value (negative, out of range, bad hex…).
    case invalidValue(path: String, reason: String)
    /// The same known field appears twice in one object (the Rust parser rejects this).
    case duplicateField(path: String)

    /// A one-line explanation naming the field.
    public var description: String {
        switch self {
        case .tooLarge(let size, let limit): "catalog of \(size) bytes exceeds the limit of \(limit) bytes"
        case .tooDeep(let limit): "catalog nests deeper than \(limit) levels"
        case .tooManyRenditions(let path, let limit): "\(path): more than \(limit) renditions"
        case .malformedJSON(let offset, let reason): "malformed JSON at byte \(offset): \(reason)"
        case .nonFiniteNumber(let path): "\(path): number out of range"
        case .wrongType(let path, let expected, let found): "\(path): expected \(expected), found \(found)"
        case .missingField(let path): "\(path): missing required field"
        case .invalidValue(let path, let reason): "\(path): \(reason)"
        case .duplicateField(let path): "\(path): duplicate field"
        }
    }

    /// `parent.key`, or `parent["key"]` when the key is not a plain identifier.
    static func path(_ parent: String, _ key: String) -> String {
        let plain =
            !key.isEmpty
            && key.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
                    || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_")
            }
        if plain { return parent + "." + key }
        var writer = JSONWriter()
        writer.string(key)
        return parent + "[" + String(decoding: writer.bytes, as: UTF8.self) + "]"
    }
}

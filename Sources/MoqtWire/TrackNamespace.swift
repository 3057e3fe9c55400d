// SPDX-License-Identifier: MIT
public import MoqBase
public import MoqWire

/// A track namespace: an ordered tuple of byte fields (docs/ietf/moqt-wire.md §8).
///
/// moq-dev maps a broadcast path to it by splitting on `/` (`room/cam` ↔ `("room", "cam")`), which
/// ``init(path:)`` and ``path`` follow; the fields themselves are bytes and compare as bytes.
public struct TrackNamespace: Sendable, Hashable, CustomStringConvertible {
    /// The fields, in order.
    public var fields: [Bytes]

    /// A namespace of these fields.
    public init(_ fields: [Bytes]) { self.fields = fields }

    /// The namespace of a broadcast path: its `/`-separated parts, empty parts dropped
    /// (moq-dev normalises paths the same way). The empty path is the empty tuple.
    public init(path: String) {
        fields = path.split(separator: "/", omittingEmptySubsequences: true).map { Bytes(utf8: String($0)) }
    }

    /// The broadcast path: the fields joined with `/`, nil when a field is not UTF-8 or holds a
    /// `/` (such a namespace has no moq-lite path).
    public var path: String? {
        var parts: [String] = []
        for field in fields {
            guard let s = field.withUnsafeBytes({ String(validating: $0, as: UTF8.self) }), !s.contains("/"), !s.isEmpty
            else { return nil }
            parts.append(s)
        }
        return parts.joined(separator: "/")
    }

    /// Total bytes of the fields (what counts toward a Full Track Name's bound).
    public var byteCount: Int { fields.reduce(0) { $0 + $1.count } }

    /// Whether `prefix`'s fields begin this namespace.
    public func hasPrefix(_ prefix: TrackNamespace) -> Bool {
        prefix.fields.count <= fields.count && zip(prefix.fields, fields).allSatisfy { $0 == $1 }
    }

    /// The fields after `prefix` (nil when it is not a prefix).
    public func suffix(after prefix: TrackNamespace) -> TrackNamespace? {
        hasPrefix(prefix) ? TrackNamespace(Array(fields.dropFirst(prefix.fields.count))) : nil
    }

    /// `prefix` followed by these fields.
    public func prefixed(by prefix: TrackNamespace) -> TrackNamespace { TrackNamespace(prefix.fields + fields) }

    /// Writes `count` and each field.
    public func encode(into w: inout WireWriter) {
        w.writeVarInt(UInt64(fields.count))
        for field in fields {
            w.writeVarInt(UInt64(field.count))
            w.writeBytes(field)
        }
    }

    /// Reads a tuple of at most ``MoqtLimits/maxNamespaceFields`` fields and
    /// ``MoqtLimits/maxFullTrackName`` bytes, and at least `minimumFields`.
    public static func decode(from r: inout WireReader, minimumFields: Int = 0) throws(DecodeError) -> TrackNamespace {
        let count = try r.readLength(limit: MoqtLimits.maxNamespaceFields)
        guard count >= minimumFields else { throw .invalidValue("a namespace of \(count) fields") }
        var fields: [Bytes] = []
        var total = 0
        for _ in 0..<count {
            let field = try r.readLengthPrefixedBytes(limit: MoqtLimits.maxFullTrackName)
            total += field.count
            guard total <= MoqtLimits.maxFullTrackName else {
                throw .tooLarge(size: UInt64(total), limit: MoqtLimits.maxFullTrackName)
            }
            fields.append(field)
        }
        return TrackNamespace(fields)
    }

    public var description: String { path.map { "(\($0))" } ?? "(\(fields.count) binary fields)" }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields.count)
        for field in fields {
            hasher.combine(field.count)
            field.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}

/// A position in a track: a group and an object within it.
public struct Location: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var group: UInt64
    public var object: UInt64

    public init(group: UInt64, object: UInt64) {
        self.group = group
        self.object = object
    }

    public static func < (a: Location, b: Location) -> Bool { (a.group, a.object) < (b.group, b.object) }

    func encode(into w: inout WireWriter) {
        w.writeVarInt(group)
        w.writeVarInt(object)
    }

    static func decode(from r: inout WireReader) throws(DecodeError) -> Location {
        Location(group: try r.readVarInt(), object: try r.readVarInt())
    }

    public var description: String { "{\(group), \(object)}" }
}

extension WireReader {
    /// A track name (bytes) whose Full Track Name with `namespace` stays within
    /// ``MoqtLimits/maxFullTrackName``.
    mutating func readTrackName(in namespace: TrackNamespace) throws(DecodeError) -> Bytes {
        let room = MoqtLimits.maxFullTrackName - namespace.byteCount
        return try readLengthPrefixedBytes(limit: Swift.max(0, room))
    }

    /// A reason phrase of at most ``MoqtLimits/maxReasonPhrase`` bytes (invalid UTF-8 is replaced,
    /// not refused: it is only shown).
    mutating func readReasonPhrase() throws(DecodeError) -> String {
        let raw = try readLengthPrefixedBytes(limit: MoqtLimits.maxReasonPhrase)
        return String(decoding: raw.array, as: UTF8.self)
    }

    /// A one-byte field whose value must be in `valid`.
    mutating func readByte(_ what: String, in valid: ClosedRange<UInt8>) throws(DecodeError) -> UInt8 {
        let value = try readUInt8()
        guard valid.contains(value) else { throw .invalidValue("\(what) \(value)") }
        return value
    }
}

extension WireWriter {
    /// A length-prefixed byte field.
    mutating func writeField(_ bytes: Bytes) {
        writeVarInt(UInt64(bytes.count))
        writeBytes(bytes)
    }

    /// A reason phrase, cut to ``MoqtLimits/maxReasonPhrase`` bytes at a character boundary.
    mutating func writeReasonPhrase(_ reason: String) {
        var utf8 = Array(reason.utf8)
        if utf8.count > MoqtLimits.maxReasonPhrase {
            // Cut before the character the limit falls in (a continuation byte is 10xxxxxx).
            var end = MoqtLimits.maxReasonPhrase
            while end > 0, utf8[end] & 0xC0 == 0x80 { end -= 1 }
            utf8 = Array(utf8.prefix(end))
        }
        writeVarInt(UInt64(utf8.count))
        writeBytes(utf8)
    }
}

// SPDX-License-Identifier: MIT

/// Broadcast path rules, as the Rust implementation applies them on the wire:
/// leading/trailing `/` are stripped, repeated `/` collapse, and prefixes match
/// whole segments only (`roo` does not match `room/alice`).
public enum BroadcastPath {
    /// The most segments a path may have (the IETF moq-transport limit the Rust side uses).
    public static let maxSegments = 32

    /// The normalised form of `path`.
    public static func normalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    /// The segments of the normalised path.
    public static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// Joins a prefix and a suffix per segment; an empty suffix is the prefix itself.
    public static func join(_ prefix: String, _ suffix: String) -> String {
        let p = normalize(prefix)
        let s = normalize(suffix)
        if p.isEmpty { return s }
        if s.isEmpty { return p }
        return p + "/" + s
    }

    /// The suffix of `path` below `prefix` (per segment), or nil when `prefix` does not match.
    /// Segments compare byte by byte, as the Rust peers compare them (Swift's `==` would
    /// treat "é" and "e\u{301}" as one, and so would let one path stand for another).
    public static func strip(prefix: String, from path: String) -> String? {
        let p = segments(prefix)
        let s = segments(path)
        guard s.count >= p.count, zip(p, s).allSatisfy({ $0.utf8.elementsEqual($1.utf8) }) else { return nil }
        return s[p.count...].joined(separator: "/")
    }

    /// True when `path` lies under `prefix` (or equals it), per segment.
    public static func hasPrefix(_ path: String, _ prefix: String) -> Bool {
        strip(prefix: prefix, from: path) != nil
    }

    /// True when a segment of `suffix` starts with `.`: such broadcasts are left out of
    /// announcements below the requested prefix (they can still be requested by name).
    public static func isHidden(suffix: String) -> Bool {
        segments(suffix).contains { $0.hasPrefix(".") }
    }

    /// Why a broadcast path given by a user is unacceptable, or nil when it is fine.
    /// Refuses empty paths, `.`/`..` segments, control characters and over-long paths.
    public static func validationError(_ path: String) -> String? {
        let segs = segments(path)
        if segs.isEmpty { return "the broadcast path is empty" }
        if segs.count > maxSegments { return "the broadcast path has more than \(maxSegments) segments" }
        if path.utf8.count > 1024 { return "the broadcast path is longer than 1024 bytes" }
        if segs.contains(where: { $0 == "." || $0 == ".." }) { return "the broadcast path contains '.' or '..'" }
        if path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            return "the broadcast path contains control characters"
        }
        return nil
    }
}

/// A path or name as a dictionary key that compares byte by byte (UTF-8), as the Rust peers
/// compare them: Swift's `String` equality and hashing are canonical, under which two
/// different paths on the wire ("café" composed and decomposed) would be one broadcast.
public struct ByteKey: Hashable, Sendable, CustomStringConvertible {
    /// The string.
    public let string: String

    public init(_ string: String) { self.string = string }

    public static func == (a: ByteKey, b: ByteKey) -> Bool { a.string.utf8.elementsEqual(b.string.utf8) }

    public func hash(into hasher: inout Hasher) {
        var copy = string
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { string }
}

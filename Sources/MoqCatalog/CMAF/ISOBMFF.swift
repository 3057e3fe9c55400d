// SPDX-License-Identifier: MIT
import MoqWire

/// Why CMAF bytes (an init segment or a fragment) could not be read.
public enum CMAFError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not what ISO BMFF allows (a box past its parent, a missing box…).
    case malformed(String)
    /// Valid, but something this reader does not handle.
    case unsupported(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed CMAF: \(why)"
        case .unsupported(let why): "unsupported CMAF: \(why)"
        }
    }
}

/// One ISO BMFF box within a byte buffer: its four-character type and where it lies.
struct ISOBox: Equatable {
    let type: UInt32
    /// The first byte of the box (its size field).
    let start: Int
    /// The first byte of its payload (after the size, type and any 64-bit size).
    let payloadStart: Int
    /// One past its last byte.
    let end: Int

    var payload: Range<Int> { payloadStart..<end }
    var range: Range<Int> { start..<end }
}

/// Reads ISO BMFF boxes and big-endian fields from untrusted bytes: every read is bounds-checked
/// and throws instead of trapping, and a buffer never yields more than ``maxBoxes`` boxes per level.
struct ISOReader {
    let data: Bytes
    /// One past the last byte a field may be read from: the data's end, or a box's
    /// (``fields(of:)``), so that a short box never lends its fields from the box after it.
    let limit: Int

    init(data: Bytes) {
        self.data = data
        limit = data.count
    }

    private init(data: Bytes, limit: Int) {
        self.data = data
        self.limit = min(limit, data.count)
    }

    /// A reader of `box`'s fields: a read past the box's end throws.
    func fields(of box: ISOBox) -> ISOReader { ISOReader(data: data, limit: box.end) }

    /// Boxes at one level beyond this are refused (a hostile file of 8-byte boxes).
    static let maxBoxes = 4096

    func u8(_ at: Int) throws(CMAFError) -> UInt8 {
        guard at >= 0, at < limit else { throw .malformed("read past the end at \(at)") }
        return data[at]
    }

    func u16(_ at: Int) throws(CMAFError) -> UInt16 {
        UInt16(try u8(at)) << 8 | UInt16(try u8(at + 1))
    }

    func u32(_ at: Int) throws(CMAFError) -> UInt32 {
        guard at >= 0, at <= limit - 4 else { throw .malformed("read past the end at \(at)") }
        return UInt32(data[at]) << 24 | UInt32(data[at + 1]) << 16 | UInt32(data[at + 2]) << 8 | UInt32(data[at + 3])
    }

    func u64(_ at: Int) throws(CMAFError) -> UInt64 {
        UInt64(try u32(at)) << 32 | UInt64(try u32(at + 4))
    }

    /// The boxes that make up `range` (a parent's payload, or the whole buffer).
    func boxes(in range: Range<Int>) throws(CMAFError) -> [ISOBox] {
        guard range.lowerBound >= 0, range.upperBound <= data.count else { throw .malformed("a range past the data") }
        var out: [ISOBox] = []
        var at = range.lowerBound
        while at < range.upperBound {
            guard out.count < Self.maxBoxes else { throw .malformed("more than \(Self.maxBoxes) boxes in one place") }
            guard range.upperBound - at >= 8 else { throw .malformed("\(range.upperBound - at) stray bytes") }
            let size32 = try u32(at)
            let type = try u32(at + 4)
            var header = 8
            let size: UInt64
            switch size32 {
            case 0: size = UInt64(range.upperBound - at)  // to the end of the parent
            case 1:
                size = try u64(at + 8)
                header = 16
            default: size = UInt64(size32)
            }
            guard size >= UInt64(header), size <= UInt64(range.upperBound - at) else {
                throw .malformed("box \(Self.name(type)) of \(size) bytes at \(at) does not fit its parent")
            }
            let end = at + Int(size)
            out.append(ISOBox(type: type, start: at, payloadStart: at + header, end: end))
            at = end
        }
        return out
    }

    /// The first child of `type` in `range`.
    func box(_ type: UInt32, in range: Range<Int>) throws(CMAFError) -> ISOBox? {
        try boxes(in: range).first { $0.type == type }
    }

    /// The first child of `type` in `range`, or an error naming what is missing.
    func require(_ type: UInt32, in range: Range<Int>, of parent: String) throws(CMAFError) -> ISOBox {
        guard let box = try box(type, in: range) else { throw .malformed("no \(Self.name(type)) in \(parent)") }
        return box
    }

    /// A four-character code from its text (ASCII, four characters).
    static func code(_ text: StaticString) -> UInt32 {
        text.withUTF8Buffer { b in b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
    }

    /// The text of a four-character code (non-printable bytes as "?").
    static func name(_ code: UInt32) -> String {
        String(
            decoding: (0..<4).map { i -> UInt8 in
                let b = UInt8(truncatingIfNeeded: code >> (24 - 8 * i))
                return (0x20...0x7e).contains(b) ? b : 0x3f
            }, as: UTF8.self)
    }
}

/// Writes ISO BMFF boxes (big-endian fields).
struct ISOWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }
    mutating func u32(_ v: UInt32) {
        bytes += [
            UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8),
            UInt8(truncatingIfNeeded: v),
        ]
    }
    mutating func u64(_ v: UInt64) {
        u32(UInt32(v >> 32))
        u32(UInt32(truncatingIfNeeded: v))
    }

    /// Appends a box of `type` whose payload `body` writes; its size is filled in after.
    mutating func box(_ type: UInt32, _ body: (inout ISOWriter) -> Void) {
        let start = bytes.count
        u32(0)
        u32(type)
        body(&self)
        let size = UInt32(clamping: bytes.count - start)
        bytes[start] = UInt8(size >> 24)
        bytes[start + 1] = UInt8(truncatingIfNeeded: size >> 16)
        bytes[start + 2] = UInt8(truncatingIfNeeded: size >> 8)
        bytes[start + 3] = UInt8(truncatingIfNeeded: size)
    }

    /// Appends raw bytes (a box copied whole).
    mutating func raw(_ data: Bytes) { data.withUnsafeBytes { bytes += $0 } }
}

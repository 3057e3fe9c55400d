// SPDX-License-Identifier: MIT

/// An immutable, reference-counted view of bytes with a stable address.
///
/// `Bytes` is the currency of the whole stack: frames travel from a GStreamer
/// buffer (or a received QUIC packet) through the session, the relay cache and
/// the transport's send buffers without being copied. Slicing is O(1) and shares
/// the storage. The memory never moves while any view of it is alive, so the
/// transport may hand its address to the QUIC library until the peer acknowledges it.
public struct Bytes: Sendable {
    @usableFromInline let storage: ByteStorage?
    @usableFromInline let offset: Int
    /// The number of bytes in the view.
    public let count: Int

    /// An empty view.
    public init() {
        storage = nil
        offset = 0
        count = 0
    }

    @usableFromInline init(storage: ByteStorage?, offset: Int, count: Int) {
        self.storage = storage
        self.offset = offset
        self.count = count
    }

    /// Copies `buffer` into new storage.
    public init(copying buffer: UnsafeRawBufferPointer) {
        if buffer.isEmpty {
            self.init()
        } else {
            self.init(storage: ByteStorage(copying: buffer), offset: 0, count: buffer.count)
        }
    }

    /// Takes ownership of `count` bytes at `memory`, which came from
    /// `UnsafeMutableRawPointer.allocate` and is deallocated when the last view goes (no copy:
    /// a frame assembled in place becomes a view of itself).
    public init(adopting memory: UnsafeMutableRawPointer, count: Int) {
        self.init(storage: ByteStorage(adopting: memory), offset: 0, count: count)
    }

    /// Copies the elements of `bytes` into new storage.
    public init(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        self = array.withUnsafeBytes { Bytes(copying: $0) }
    }

    /// Copies the UTF-8 encoding of `string`.
    public init(utf8 string: String) {
        var s = string
        self = s.withUTF8 { Bytes(copying: UnsafeRawBufferPointer($0)) }
    }

    /// Wraps foreign memory without copying it.
    ///
    /// - Parameters:
    ///   - owner: kept alive as long as any view of the bytes exists; its `deinit`
    ///     releases the memory (for example a mapped `GstBuffer`).
    ///   - base: the first byte; must stay valid and unchanged while `owner` lives.
    ///   - count: the number of bytes.
    public init(owner: any AnyObject & Sendable, base: UnsafeRawPointer, count: Int) {
        precondition(count >= 0)
        if count == 0 {
            self.init()
        } else {
            self.init(storage: ByteStorage(owner: owner, base: base), offset: 0, count: count)
        }
    }

    /// True when the view holds no bytes.
    @inlinable public var isEmpty: Bool { count == 0 }

    /// Calls `body` with the bytes. The pointer stays valid for as long as this
    /// value (or any slice sharing its storage) is alive.
    @inlinable
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        guard let storage else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: storage.base + offset, count: count))
    }

    /// The byte at `index` (0-based within this view).
    @inlinable public subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "Bytes index out of range")
        return storage!.base.load(fromByteOffset: offset + index, as: UInt8.self)
    }

    /// A view of `range` (0-based within this view) sharing the same storage.
    @inlinable public subscript(range: Range<Int>) -> Bytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "Bytes range out of bounds")
        if range.isEmpty { return Bytes() }
        return Bytes(storage: storage, offset: offset + range.lowerBound, count: range.count)
    }

    /// The bytes from `start` to the end.
    @inlinable public func dropFirst(_ n: Int) -> Bytes { self[Swift.min(n, count)..<count] }

    /// A copy of the bytes as an array.
    public var array: [UInt8] { withUnsafeBytes { Array($0) } }
}

extension Bytes: Equatable {
    public static func == (lhs: Bytes, rhs: Bytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in a.elementsEqual(b) } }
    }
}

extension Bytes: CustomStringConvertible {
    /// Lowercase hex, truncated after 64 bytes.
    public var description: String {
        let shown = withUnsafeBytes { Array($0.prefix(64)) }
        return Hex.encode(shown) + (count > 64 ? "…(\(count) bytes)" : "")
    }
}

extension Bytes: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: UInt8...) { self.init(elements) }
}

/// Storage with a stable address. Immutable once created, hence `Sendable`.
@usableFromInline
final class ByteStorage: @unchecked Sendable {
    @usableFromInline let base: UnsafeRawPointer
    private let owner: (any AnyObject & Sendable)?

    init(copying buffer: UnsafeRawBufferPointer) {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: buffer.count, alignment: 16)
        memory.copyMemory(from: buffer.baseAddress!, byteCount: buffer.count)
        base = UnsafeRawPointer(memory)
        owner = nil
    }

    init(owner: any AnyObject & Sendable, base: UnsafeRawPointer) {
        self.base = base
        self.owner = owner
    }

    /// Takes ownership of memory from `UnsafeMutableRawPointer.allocate`.
    init(adopting memory: UnsafeMutableRawPointer) {
        base = UnsafeRawPointer(memory)
        owner = nil
    }

    deinit {
        if owner == nil { UnsafeMutableRawPointer(mutating: base).deallocate() }
    }
}

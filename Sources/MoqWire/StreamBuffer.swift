// SPDX-License-Identifier: MIT

/// Accumulates the bytes of a control stream and yields whole messages.
///
/// A message is decoded only once all its bytes have arrived (the size prefix is
/// peeked first), so drip-fed input costs O(n). A declared size over the limit is
/// refused as soon as the size varint is complete, before buffering the body.
public struct StreamBuffer: Sendable {
    private var pending: [UInt8] = []
    private var start = 0
    /// The per-message size limit.
    public let limit: Int

    public init(limit: Int = WireLimits.maxControlMessage) { self.limit = limit }

    /// Bytes received and not yet consumed.
    public var buffered: Int { pending.count - start }

    /// Appends received bytes.
    public mutating func append(_ data: UnsafeRawBufferPointer) {
        if start > 0 && start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
        pending.append(contentsOf: data)
    }

    /// Appends received bytes.
    public mutating func append(_ data: [UInt8]) { data.withUnsafeBytes { append($0) } }

    private func peekVarInt(at offset: Int) -> (value: UInt64, length: Int)? { VarInt.peek(pending, at: offset) }

    private mutating func take(_ count: Int) -> Bytes {
        let bytes = pending.withUnsafeBytes {
            Bytes(copying: UnsafeRawBufferPointer(rebasing: $0[start..<start + count]))
        }
        start += count
        return bytes
    }

    /// Removes and returns every buffered byte (to hand a stream over to another decoder).
    public mutating func drain() -> [UInt8] {
        let rest = Array(pending[start...])
        pending.removeAll(keepingCapacity: false)
        start = 0
        return rest
    }

    /// Reads a bare varint (a stream type), or nil if incomplete.
    public mutating func readVarInt() -> UInt64? {
        guard let (value, length) = peekVarInt(at: start) else { return nil }
        start += length
        return value
    }

    /// The next `varint(size) + body` message, or nil until it is complete.
    public mutating func next<M: WireMessage>(_ type: M.Type) throws(DecodeError) -> M? {
        guard let (size, length) = peekVarInt(at: start) else { return nil }
        guard size <= UInt64(limit) else { throw .tooLarge(size: size, limit: limit) }
        guard buffered >= length + Int(size) else { return nil }
        _ = take(length)
        var body = WireReader(take(Int(size)))
        let message = try M.decode(body: &body)
        try body.expectEnd()
        return message
    }

    /// The next complete `varint(type) + varint(size) + body` frame, or nil until complete.
    public mutating func nextTyped() throws(DecodeError) -> WireReader? {
        guard let (_, typeLength) = peekVarInt(at: start),
            let (size, sizeLength) = peekVarInt(at: start + typeLength)
        else { return nil }
        guard size <= UInt64(limit) else { throw .tooLarge(size: size, limit: limit) }
        let total = typeLength + sizeLength + Int(size)
        guard buffered >= total else { return nil }
        return WireReader(take(total))
    }

    /// The next announcement (typed), or nil until complete.
    public mutating func nextAnnouncement() throws(DecodeError) -> Announcement? {
        guard var r = try nextTyped() else { return nil }
        return try Announcement.decode(from: &r)
    }

    /// The next subscribe response (typed), or nil until complete.
    public mutating func nextSubscribeResponse() throws(DecodeError) -> SubscribeResponse? {
        guard var r = try nextTyped() else { return nil }
        return try SubscribeResponse.decode(from: &r)
    }
}

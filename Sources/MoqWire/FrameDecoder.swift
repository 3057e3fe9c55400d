// SPDX-License-Identifier: MIT

/// What a ``FrameDecoder`` produced from received bytes.
public enum FrameStreamEvent: Sendable, Equatable {
    /// The GROUP header (group streams only).
    case header(GroupHeader)
    /// One complete frame with its absolute timestamp.
    case frame(Frame)
}

/// Incrementally decodes a Group stream (after its type byte) or a Fetch reply:
/// an optional GROUP header, then frames `zigzag(Δts), size, payload` until FIN.
///
/// Frames are produced whole. A frame's declared size is checked against the
/// limit before any of its payload is buffered, and memory for it grows with the
/// bytes that actually arrive, so a peer cannot make us allocate what it never sends.
public struct FrameDecoder {
    private enum State: Sendable {
        case header
        case frameHeader
        case payload(timestamp: UInt64, size: Int)
        case finished
    }

    private enum Parsed {
        case header(GroupHeader)
        case frame(delta: UInt64, size: UInt64)
    }

    private var state: State
    /// Bytes of an incomplete header carried over between calls (bounded by the header limits).
    private var carry: [UInt8] = []
    private var payload: PayloadAssembler?
    private var previousTimestamp: UInt64 = 0
    /// The largest frame accepted.
    public let frameLimit: Int
    /// Frames decoded so far.
    public private(set) var frameCount = 0

    /// Memory held for what has not been returned yet: an incomplete header, and the
    /// allocation of the frame being assembled.
    public var bufferedBytes: Int { carry.count + (payload?.allocated ?? 0) }

    /// - Parameter expectHeader: true for Group streams, false for Fetch replies.
    public init(expectHeader: Bool, frameLimit: Int = WireLimits.maxFrame) {
        state = expectHeader ? .header : .frameHeader
        self.frameLimit = frameLimit
    }

    /// True when the stream ended cleanly.
    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Feeds received bytes; `fin` marks the end of the stream. Throws
    /// ``DecodeError/truncated`` when the stream ends inside a header or frame.
    public mutating func feed(_ data: UnsafeRawBufferPointer, fin: Bool) throws(DecodeError) -> [FrameStreamEvent] {
        var events: [FrameStreamEvent] = []
        var offset = 0
        while true {
            switch state {
            case .finished:
                if offset < data.count { throw .trailingBytes(data.count - offset) }
                return events
            case .payload(let timestamp, let size):
                let assembler = payload ?? PayloadAssembler(size: size)
                let take = min(size - assembler.filled, data.count - offset)
                if take > 0 {
                    assembler.append(UnsafeRawBufferPointer(rebasing: data[offset..<offset + take]))
                    offset += take
                }
                if assembler.filled == size {
                    events.append(.frame(Frame(timestamp: timestamp, payload: assembler.finish())))
                    frameCount += 1
                    payload = nil
                    state = .frameHeader
                    continue
                }
                payload = assembler
                if fin { throw .truncated }
                return events
            case .header, .frameHeader:
                let expectHeader: Bool
                if case .header = state { expectHeader = true } else { expectHeader = false }
                let rest = UnsafeRawBufferPointer(rebasing: data[offset...])
                var parsed: (Parsed, Int)?
                if carry.isEmpty {
                    parsed = try parse(rest, header: expectHeader)
                    if let (_, used) = parsed {
                        offset += used
                    } else {
                        carry.append(contentsOf: rest)
                        offset = data.count
                    }
                } else {
                    let old = carry.count
                    carry.append(contentsOf: rest)
                    let result = carry.withUnsafeBytes { buffer in
                        Result { () throws(DecodeError) in try parse(buffer, header: expectHeader) }
                    }
                    parsed = try result.get()
                    if let (_, used) = parsed {
                        offset += used - old
                        carry.removeAll(keepingCapacity: true)
                    } else {
                        offset = data.count
                    }
                }
                switch parsed?.0 {
                case .header(let h):
                    events.append(.header(h))
                    state = .frameHeader
                case .frame(let delta, let size):
                    guard size <= UInt64(frameLimit) else { throw .tooLarge(size: size, limit: frameLimit) }
                    let timestamp = previousTimestamp &+ UInt64(bitPattern: VarInt.unzigzag(delta))
                    previousTimestamp = timestamp
                    state = .payload(timestamp: timestamp, size: Int(size))
                case nil:
                    guard fin else { return events }
                    if !expectHeader && carry.isEmpty {
                        state = .finished
                        return events
                    }
                    throw .truncated
                }
            }
        }
    }

    /// Parses a group header or a frame header from the start of `buffer`.
    /// Returns nil while incomplete; refuses oversized declarations at once.
    private func parse(_ buffer: UnsafeRawBufferPointer, header: Bool) throws(DecodeError) -> (Parsed, Int)? {
        var offset = 0
        func varint() -> UInt64? {
            guard offset < buffer.count else { return nil }
            let length = VarInt.length(firstByte: buffer[offset])
            guard offset + length <= buffer.count else { return nil }
            var v = UInt64(buffer[offset] & 0x3f)
            for i in 1..<length { v = v << 8 | UInt64(buffer[offset + i]) }
            offset += length
            return v
        }
        if header {
            guard let size = varint() else { return nil }
            guard size <= UInt64(WireLimits.maxControlMessage) else {
                throw .tooLarge(size: size, limit: WireLimits.maxControlMessage)
            }
            guard buffer.count - offset >= Int(size) else { return nil }
            var body = WireReader(Bytes(copying: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + Int(size)])))
            let h = try GroupHeader.decode(body: &body)
            try body.expectEnd()
            return (.header(h), offset + Int(size))
        }
        guard let delta = varint() else { return nil }
        guard let size = varint() else { return nil }
        return (.frame(delta: delta, size: size), offset)
    }
}

/// Collects one frame's payload as it arrives, growing with the data received.
/// Frees its memory if the stream dies before the frame completes.
final class PayloadAssembler {
    private var memory: UnsafeMutableRawPointer?
    private var capacity: Int
    private(set) var filled = 0
    let size: Int
    /// Bytes allocated (at most the frame size; 0 once handed over).
    var allocated: Int { memory == nil ? 0 : capacity }

    /// Allocations start at this size (or the frame size when smaller) and double.
    static let initialCapacity = 64 * 1024

    init(size: Int) {
        self.size = size
        capacity = max(1, min(size, Self.initialCapacity))
        memory = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { memory?.deallocate() }

    func append(_ data: UnsafeRawBufferPointer) {
        guard !data.isEmpty else { return }
        if filled + data.count > capacity {
            var newCapacity = capacity
            while newCapacity < filled + data.count { newCapacity *= 2 }
            newCapacity = min(newCapacity, size)
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
            grown.copyMemory(from: memory!, byteCount: filled)
            memory!.deallocate()
            memory = grown
            capacity = newCapacity
        }
        (memory! + filled).copyMemory(from: data.baseAddress!, byteCount: data.count)
        filled += data.count
    }

    /// Hands the memory over to a `Bytes` without copying.
    func finish() -> Bytes {
        guard let owned = memory else { return Bytes() }
        memory = nil
        if size == 0 {
            owned.deallocate()
            return Bytes()
        }
        return Bytes(adopting: owned, count: size)
    }
}

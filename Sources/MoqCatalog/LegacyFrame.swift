// SPDX-License-Identifier: MIT
public import MoqWire

/// A frame in hang's legacy container: `varint(timestamp µs)` then the raw codec bytes.
///
/// A frame whose codec payload is empty is the "end of group" marker hang writes
/// after the last frame of each video group: its timestamp is the next group's
/// start and closes the last frame's duration. Players skip it
/// (``isEndOfGroup``).
public struct LegacyFrame: Sendable, Equatable {
    /// Presentation time in microseconds.
    public var timestamp: UInt64
    /// The codec bytes (for example an AVCC access unit or one Opus packet).
    public var payload: Bytes

    /// A frame with `timestamp` and `payload`.
    public init(timestamp: UInt64, payload: Bytes) {
        self.timestamp = timestamp
        self.payload = payload
    }

    /// True for the timestamp-only frame that ends a group.
    public var isEndOfGroup: Bool { payload.isEmpty }

    /// Splits a received frame. The payload is a slice of `frame`: nothing is copied.
    ///
    /// - Throws: ``LegacyFrameError/truncatedTimestamp`` when the frame ends inside the varint.
    public init(decoding frame: Bytes) throws(LegacyFrameError) {
        var reader = WireReader(frame)
        do {
            timestamp = try reader.readVarInt()
        } catch {
            throw .truncatedTimestamp
        }
        payload = reader.readRest()
    }

    /// The frame's wire form, built with a single copy of the payload.
    public func encoded() throws(LegacyFrameError) -> Bytes {
        try payload.withUnsafeBytes { buffer throws(LegacyFrameError) in
            try Self.encode(timestamp: timestamp, payload: buffer)
        }
    }

    /// Builds `varint(timestamp) + payload` into new storage: one copy of `payload`
    /// (for example straight out of a mapped `GstBuffer`), no intermediate array.
    ///
    /// - Throws: ``LegacyFrameError/timestampOutOfRange(_:)`` above 2^62 − 1 µs.
    public static func encode(timestamp: UInt64, payload: UnsafeRawBufferPointer) throws(LegacyFrameError) -> Bytes {
        guard timestamp <= VarInt.max else { throw .timestampOutOfRange(timestamp) }
        var header: [UInt8] = []
        header.reserveCapacity(8)
        VarInt.encode(timestamp, into: &header)
        let count = header.count + payload.count
        let storage = FrameStorage(byteCount: count)
        header.withUnsafeBytes { storage.memory.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        if let base = payload.baseAddress, payload.count > 0 {
            (storage.memory + header.count).copyMemory(from: base, byteCount: payload.count)
        }
        return Bytes(owner: storage, base: UnsafeRawPointer(storage.memory), count: count)
    }

    /// The end-of-group marker: a frame carrying only `timestamp`.
    public static func endOfGroup(timestamp: UInt64) throws(LegacyFrameError) -> Bytes {
        try encode(timestamp: timestamp, payload: UnsafeRawBufferPointer(start: nil, count: 0))
    }
}

/// Why a legacy frame could not be built or read.
public enum LegacyFrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The frame ended inside its timestamp varint (an empty frame included).
    case truncatedTimestamp
    /// A timestamp above the varint range (2^62 − 1 µs).
    case timestampOutOfRange(UInt64)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .truncatedTimestamp: "legacy frame ends inside its timestamp"
        case .timestampOutOfRange(let t): "timestamp \(t) µs exceeds the varint range"
        }
    }
}

/// Memory owned by the `Bytes` views of one encoded frame; freed with the last view.
private final class FrameStorage: @unchecked Sendable {
    let memory: UnsafeMutableRawPointer

    init(byteCount: Int) {
        memory = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(byteCount, 1), alignment: 16)
    }

    deinit { memory.deallocate() }
}

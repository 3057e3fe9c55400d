// SPDX-License-Identifier: MIT

/// The header of a Group uni stream (after the stream type 0x00).
public struct GroupHeader: WireMessage {
    /// The subscription (or 0 for none) this group answers.
    public var subscribeID: UInt64
    /// The group sequence number.
    public var sequence: UInt64
    /// The index of the first frame carried on this stream.
    public var frameStart: UInt64

    public init(subscribeID: UInt64, sequence: UInt64, frameStart: UInt64 = 0) {
        self.subscribeID = subscribeID
        self.sequence = sequence
        self.frameStart = frameStart
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> GroupHeader {
        GroupHeader(subscribeID: try r.readVarInt(), sequence: try r.readVarInt(), frameStart: try r.readVarInt())
    }

    public func encode(body w: inout WireWriter) {
        w.writeVarInt(subscribeID)
        w.writeVarInt(sequence)
        w.writeVarInt(frameStart)
    }
}

/// One frame of a group or fetch stream: `zigzag(Δtimestamp), size, payload`.
public struct Frame: Sendable, Equatable {
    /// The absolute timestamp in the track's timescale.
    public var timestamp: UInt64
    /// The payload (may be empty).
    public var payload: Bytes

    public init(timestamp: UInt64, payload: Bytes) {
        self.timestamp = timestamp
        self.payload = payload
    }

    /// The frame header bytes (delta and size); the payload follows separately so
    /// that it can be sent without a copy. `previous` is the previous frame's
    /// timestamp on the same stream, or 0 for the first frame.
    ///
    /// nil when the delta cannot be written: its zigzag form must be a varint, so it must lie
    /// in [−2^61, 2^61). A first frame (delta from 0) at 2^61 or later, which a peer can send
    /// as a datagram or reach by summing deltas, cannot start a stream: the caller resets the
    /// stream with TIMESTAMP_MISMATCH instead of sending a wrong timestamp.
    public func encodedHeader(previous: UInt64) -> [UInt8]? {
        let delta = Int64(bitPattern: timestamp &- previous)
        guard delta >= -(1 << 61), delta < (1 << 61) else { return nil }
        var w = WireWriter(capacity: 16)
        w.writeVarInt(VarInt.zigzag(delta))
        w.writeVarInt(payload.count)
        return w.bytes
    }

    /// Decodes one complete frame (used where the whole frame is already buffered).
    public static func decode(
        from r: inout WireReader, previous: UInt64, limit: Int = WireLimits.maxFrame
    ) throws(DecodeError) -> Frame {
        let delta = VarInt.unzigzag(try r.readVarInt())
        let payload = try r.readLengthPrefixedBytes(limit: limit)
        return Frame(timestamp: previous &+ UInt64(bitPattern: delta), payload: payload)
    }
}

// SPDX-License-Identifier: MIT

/// A QUIC DATAGRAM carrying a one-frame group:
/// `subscribe_id, group_sequence, timestamp (absolute, not zigzag), payload (rest)`.
public struct Datagram: Sendable, Equatable {
    /// The subscription it answers.
    public var subscribeID: UInt64
    /// The group sequence.
    public var sequence: UInt64
    /// Absolute timestamp in the track's timescale.
    public var timestamp: UInt64
    /// The frame payload.
    public var payload: Bytes

    public init(subscribeID: UInt64, sequence: UInt64, timestamp: UInt64, payload: Bytes) {
        self.subscribeID = subscribeID
        self.sequence = sequence
        self.timestamp = timestamp
        self.payload = payload
    }

    /// Decodes a whole datagram.
    public static func decode(_ bytes: Bytes) throws(DecodeError) -> Datagram {
        guard bytes.count <= WireLimits.maxDatagram else {
            throw .tooLarge(size: UInt64(bytes.count), limit: WireLimits.maxDatagram)
        }
        var r = WireReader(bytes)
        let id = try r.readVarInt()
        let seq = try r.readVarInt()
        let ts = try r.readVarInt()
        return Datagram(subscribeID: id, sequence: seq, timestamp: ts, payload: r.readRest())
    }

    /// The encoding of the header fields; the payload follows.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: 16 + payload.count)
        w.writeVarInt(subscribeID)
        w.writeVarInt(sequence)
        w.writeVarInt(timestamp)
        w.writeBytes(payload)
        return w.bytes
    }
}

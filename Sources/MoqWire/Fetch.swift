// SPDX-License-Identifier: MIT

/// FETCH: one group by sequence (subscriber → publisher). The reply is a run of
/// frames (first delta absolute), then FIN; errors are stream resets.
public struct Fetch: WireMessage {
    /// The broadcast path.
    public var broadcast: String
    /// The track name.
    public var track: String
    /// Subscriber priority.
    public var priority: UInt8
    /// The group sequence.
    public var group: UInt64
    /// The first frame wanted.
    public var frameStart: UInt64
    /// The last frame wanted (inclusive), or nil for all. Encoded +1.
    public var frameEnd: UInt64?

    public init(
        broadcast: String, track: String, priority: UInt8 = 0, group: UInt64, frameStart: UInt64 = 0,
        frameEnd: UInt64? = nil
    ) {
        self.broadcast = broadcast
        self.track = track
        self.priority = priority
        self.group = group
        self.frameStart = frameStart
        self.frameEnd = frameEnd
    }

    /// Decodes a FETCH; a frame range that ends before it starts is invalid (moq-dev resets it).
    public static func decode(body r: inout WireReader) throws(DecodeError) -> Fetch {
        let fetch = Fetch(
            broadcast: try r.readString(), track: try r.readString(), priority: try r.readUInt8(),
            group: try r.readVarInt(), frameStart: try r.readVarInt(), frameEnd: try r.readOptionalPlusOne())
        if let end = fetch.frameEnd, end < fetch.frameStart { throw .invalidValue("frame end before frame start") }
        return fetch
    }

    public func encode(body w: inout WireWriter) {
        w.writeString(broadcast)
        w.writeString(track)
        w.writeUInt8(priority)
        w.writeVarInt(group)
        w.writeVarInt(frameStart)
        w.writeOptionalPlusOne(frameEnd)
    }
}

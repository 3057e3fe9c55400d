// SPDX-License-Identifier: MIT

/// TRACK: the request on a Track stream (subscriber → publisher).
public struct TrackRequest: WireMessage {
    /// The broadcast path.
    public var broadcast: String
    /// The track name within the broadcast.
    public var track: String

    public init(broadcast: String, track: String) {
        self.broadcast = broadcast
        self.track = track
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> TrackRequest {
        TrackRequest(broadcast: try r.readString(), track: try r.readString())
    }

    public func encode(body w: inout WireWriter) {
        w.writeString(broadcast)
        w.writeString(track)
    }
}

/// TRACK_INFO: the publisher's (untyped) answer to TRACK, then FIN.
public struct TrackInfo: WireMessage, Hashable {
    /// Publisher priority (higher is more important); used by relays upstream.
    public var priority: UInt8
    /// How long non-latest groups are cached, in ms; ≥ 2^53 − 1 means unlimited.
    public var maxAgeMs: UInt64
    /// Timestamp units per second for frame and datagram timestamps; never 0.
    public var timescale: UInt64

    /// moq-lite's defaults for a raw track: priority 127, 5 s, microseconds.
    public init(priority: UInt8 = 127, maxAgeMs: UInt64 = 5000, timescale: UInt64 = 1_000_000) {
        self.priority = priority
        self.maxAgeMs = maxAgeMs
        self.timescale = timescale
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> TrackInfo {
        let priority = try r.readUInt8()
        let maxAge = try r.readVarInt()
        let timescale = try r.readVarInt()
        guard timescale != 0 else { throw .invalidValue("timescale 0") }
        return TrackInfo(priority: priority, maxAgeMs: maxAge, timescale: timescale)
    }

    public func encode(body w: inout WireWriter) {
        w.writeUInt8(priority)
        w.writeVarInt(maxAgeMs)
        w.writeVarInt(timescale)
    }
}

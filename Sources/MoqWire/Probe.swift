// SPDX-License-Identifier: MIT

/// PROBE: a bandwidth report on a Probe stream (publisher of reports → opener).
/// The opener of a Probe stream must never write on it.
public struct Probe: WireMessage {
    /// Estimated bitrate in bits per second; 0 means unknown.
    public var bitrate: UInt64
    /// Round-trip time in ms; 0 means unknown.
    public var rttMs: UInt64

    public init(bitrate: UInt64, rttMs: UInt64) {
        self.bitrate = bitrate
        self.rttMs = rttMs
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> Probe {
        Probe(bitrate: try r.readVarInt(), rttMs: try r.readVarInt())
    }

    public func encode(body w: inout WireWriter) {
        w.writeVarInt(bitrate)
        w.writeVarInt(rttMs)
    }
}

// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqPlayback

/// What a running ``Publisher`` has sent (from `moqsink`'s `stats`).
public struct PublisherStats: Sendable, Equatable {
    /// Per track: frames, groups and codec bytes published.
    public struct Track: Sendable, Equatable {
        /// The catalog (or data) track name.
        public var name: String
        /// Frames published.
        public var frames: Int
        /// Groups published.
        public var groups: Int
        /// Codec bytes published.
        public var bytes: Int
    }

    /// Connection status (`connected`, `reconnecting`…).
    public var status: String
    /// Round-trip time to the relay.
    public var roundTripTime: Duration?
    /// The congestion controller's send rate estimate, bit/s.
    public var estimatedSendRateBps: Int
    /// Bytes sent on the connection.
    public var bytesSent: Int
    /// Groups dropped because a subscriber or the link could not keep up.
    public var groupsDropped: Int
    /// Reconnections so far.
    public var reconnects: Int
    /// The tracks.
    public var tracks: [Track]

    init(_ s: Structure) {
        status = s[StatsKey.status.rawValue]?.stringValue ?? "disconnected"
        let rttMs = s[StatsKey.roundTripTimeMs.rawValue]?.doubleValue ?? 0
        roundTripTime = rttMs > 0 ? .microseconds(Int64(rttMs * 1000)) : nil
        estimatedSendRateBps = Int(s[StatsKey.sendRateBps.rawValue]?.intValue ?? 0)
        bytesSent = Int(s[StatsKey.bytesSent.rawValue]?.intValue ?? 0)
        groupsDropped = Int(s[StatsKey.groupsDropped.rawValue]?.intValue ?? 0)
        reconnects = Int(s[StatsKey.reconnects.rawValue]?.intValue ?? 0)
        tracks = s.fields.compactMap { field in
            guard case .structure(let t) = field.value else { return nil }
            return Track(
                name: field.name, frames: Int(t[StatsKey.PerTrack.frames.rawValue]?.intValue ?? 0),
                groups: Int(t[StatsKey.PerTrack.groups.rawValue]?.intValue ?? 0),
                bytes: Int(t[StatsKey.PerTrack.bytes.rawValue]?.intValue ?? 0))
        }
    }
}

extension Publisher {
    /// What has been sent so far; nil before ``start()`` or after it stopped.
    public func statistics() -> PublisherStats? {
        guard let pipeline = runningPipeline,
            let stats = try? pipeline.element(named: "moq").property("stats")?.structureValue
        else { return nil }
        return PublisherStats(stats)
    }
}

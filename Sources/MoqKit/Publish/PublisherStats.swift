// SPDX-License-Identifier: MIT
import MoqPipeline

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
        status = s["status"]?.stringValue ?? "disconnected"
        let rtt = s["rtt-us"]?.intValue ?? 0
        roundTripTime = rtt > 0 ? .microseconds(rtt) : nil
        estimatedSendRateBps = Int(s["send-rate-bps"]?.intValue ?? 0)
        bytesSent = Int(s["bytes-sent"]?.intValue ?? 0)
        groupsDropped = Int(s["groups-dropped"]?.intValue ?? 0)
        reconnects = Int(s["reconnects"]?.intValue ?? 0)
        tracks = s.fields.compactMap { field in
            guard case .structure(let t) = field.value else { return nil }
            return Track(
                name: field.name, frames: Int(t["frames"]?.intValue ?? 0), groups: Int(t["groups"]?.intValue ?? 0),
                bytes: Int(t["bytes"]?.intValue ?? 0))
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

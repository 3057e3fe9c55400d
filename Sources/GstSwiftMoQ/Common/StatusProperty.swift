// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

/// The read-only connection properties moqsrc and moqsink both install, under moq-gst 0.4.9's names
/// (and the names moq-gst used before, `estimated-send-bitrate`/`-recv-bitrate`, as aliases): one
/// spec and reader each, so the two elements cannot drift apart.
enum StatusProperty: String, CaseIterable {
    case connectionStats, sessions, estimatedSendRate, estimatedRecvRate, estimatedSendBitrate,
        estimatedRecvBitrate

    /// The GObject property name.
    var name: String {
        switch self {
        case .connectionStats: "connection-stats"
        case .sessions: "sessions"
        case .estimatedSendRate: "estimated-send-rate"
        case .estimatedRecvRate: "estimated-recv-rate"
        case .estimatedSendBitrate: "estimated-send-bitrate"
        case .estimatedRecvBitrate: "estimated-recv-bitrate"
        }
    }

    /// The property's spec (read-only).
    func spec() -> UnsafeMutablePointer<GParamSpec> {
        let ro = ParamFlags.readable
        switch self {
        case .connectionStats:
            return Property.structure(
                name, "Connection statistics",
                "The current QUIC connection, as moq-gst reports it: rtt-us, rate-bps (estimated send rate), recv-rate-bps, bytes-sent, bytes-received, packets-sent, packets-received, packets-lost (updated every 500 ms; zeros while disconnected)",
                flags: ro)
        case .sessions:
            return Property.uint64(
                name, "Sessions",
                "Sessions established with the relay since the element was created: the first, each reconnection and each GOAWAY handover",
                default: 0, flags: ro)
        case .estimatedSendRate:
            return Property.uint64(
                name, "Estimated send rate", "What the connection sends, in bit/s (0 when idle or disconnected)",
                default: 0, flags: ro)
        case .estimatedRecvRate:
            return Property.uint64(
                name, "Estimated receive rate",
                "What the connection receives, in bit/s (0 when idle or disconnected)", default: 0, flags: ro)
        case .estimatedSendBitrate:
            return Property.uint64(
                name, "Estimated send bitrate", "Alias of estimated-send-rate (moq-gst's name before 0.4.9)",
                default: 0, flags: ro)
        case .estimatedRecvBitrate:
            return Property.uint64(
                name, "Estimated receive bitrate", "Alias of estimated-recv-rate (moq-gst's name before 0.4.9)",
                default: 0, flags: ro)
        }
    }

    /// Reads the property from the element's connection.
    func get(_ link: ElementConnection, into value: UnsafeMutablePointer<GValue>) {
        let stats = link.connectedStats
        switch self {
        case .connectionStats: g_value_take_boxed(value, link.connectionStats())
        case .sessions: g_value_set_uint64(value, guint64(link.sessions))
        case .estimatedSendRate, .estimatedSendBitrate: g_value_set_uint64(value, guint64(stats?.sendRateBps ?? 0))
        case .estimatedRecvRate, .estimatedRecvBitrate: g_value_set_uint64(value, guint64(stats?.receiveRateBps ?? 0))
        }
    }
}

extension ElementPropertyID {
    /// The shared status property this id is, if it is one.
    var statusProperty: StatusProperty? { StatusProperty(rawValue: String(describing: self)) }
}

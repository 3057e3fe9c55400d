// SPDX-License-Identifier: MIT

/// What a ``QMuxConnection`` grants its peer and how it keeps the connection alive. The budgets
/// are QUIC's (`QUICSettings`), so a session holds as much over WebSocket as over QUIC.
public struct QMuxSettings: Sendable {
    /// Receive window of the whole connection, in bytes: the most received and not yet consumed.
    public var maxData: UInt64 = 64 << 20
    /// Receive window of each stream, in bytes.
    public var maxStreamData: UInt64 = 1_250_000
    /// Bidirectional streams the peer may have open at once; credit returns as they close.
    public var maxStreamsBidi: UInt64 = 10_000
    /// Unidirectional streams the peer may have open at once; credit returns as they close.
    public var maxStreamsUni: UInt64 = 10_000
    /// Idle timeout advertised, in milliseconds: the connection closes after this much silence
    /// (the smaller of both sides' applies). moq-dev's is 30 s.
    public var idleTimeoutMs: UInt64 = 30_000
    /// A QX_PING goes out when nothing was sent for this long, in milliseconds (0: never). It also
    /// measures the round trip.
    public var keepAliveMs: UInt64 = 1_000

    public init() {}
}

// SPDX-License-Identifier: MIT
public import MoqWire

/// What a session core needs from a QUIC connection. `SwiftMoQ`'s `QUICSessionTransport`
/// adapts a `MoqQUIC` connection to it (this module knows nothing of QUIC); tests use an
/// in-memory pair. Every call happens on the session thread; nothing blocks.
public protocol SessionTransport: AnyObject {
    /// True for the side that opened the connection.
    var isClient: Bool { get }
    /// Opens a stream, or returns nil while the peer's stream credit is exhausted
    /// (the core retries on ``SessionCore/streamCreditAvailable(bidirectional:)``).
    func openStream(bidirectional: Bool) -> Int64?
    /// Queues bytes (kept, not copied, until acknowledged); `fin` ends the stream after them.
    func write(_ stream: Int64, _ data: Bytes, fin: Bool)
    /// Ends the send side after the queued bytes.
    func finish(_ stream: Int64)
    /// The session is done with `bytes` received on `stream` (parsed, moved into a track's
    /// cache, or dropped): the transport returns that much flow-control credit to the peer.
    /// Received bytes the session still holds keep their credit until then.
    func consumed(_ stream: Int64, bytes: Int)
    /// RESET_STREAM with a wire code (already WebTransport-mapped).
    func resetStream(_ stream: Int64, code: UInt64)
    /// STOP_SENDING with a wire code (already WebTransport-mapped).
    func stopSending(_ stream: Int64, code: UInt64)
    /// Higher send orders are transmitted first.
    func setSendOrder(_ stream: Int64, _ order: Int64)
    /// Bytes written on `stream` that have not been transmitted yet.
    func unsentBytes(_ stream: Int64) -> Int
    /// Bytes written on all streams that have not been transmitted yet (cheap to ask).
    var totalUnsentBytes: Int { get }
    /// Asks for one ``SessionCore/sendBufferDrained()`` call as soon as fewer than `threshold`
    /// bytes remain unsent across the connection.
    func notifyWhenUnsent(below threshold: Int)
    /// Sends a QUIC DATAGRAM; false when not negotiated or too large.
    func sendDatagram(_ data: Bytes) -> Bool
    /// The largest datagram payload the peer accepts (0: none).
    var maxDatagramPayload: Int { get }
    /// Closes the connection with an application code (a raw session code).
    func close(code: UInt64, reason: String)
    /// Round-trip and rate estimates for Probe reports and stats.
    var transportEstimates: TransportEstimates { get }
}

/// Estimates a transport provides for bandwidth reports and statistics.
public struct TransportEstimates: Sendable, Equatable {
    /// Smoothed round-trip time in microseconds (0: unknown).
    public var smoothedRTTMicros: UInt64
    /// Estimated send rate in bits per second (0: unknown).
    public var sendRateBps: UInt64

    public init(smoothedRTTMicros: UInt64 = 0, sendRateBps: UInt64 = 0) {
        self.smoothedRTTMicros = smoothedRTTMicros
        self.sendRateBps = sendRateBps
    }
}

/// QUIC stream id helpers (RFC 9000 §2.1).
public enum StreamID {
    /// True for unidirectional streams.
    @inlinable public static func isUnidirectional(_ id: Int64) -> Bool { id & 0x2 != 0 }
    /// True for streams opened by the server.
    @inlinable public static func isServerInitiated(_ id: Int64) -> Bool { id & 0x1 != 0 }
}

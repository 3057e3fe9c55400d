// SPDX-License-Identifier: MIT

/// What a transport tells the session it carries, on the session's thread: the events a
/// ``SessionTransport`` delivers. moq-lite's ``SessionCore`` and MoQ Transport's core both take
/// them, so one connection (and one in-memory test link) drives either protocol family.
public protocol TransportEventSink: AnyObject {
    /// The handshake completed.
    func connected()
    /// The peer opened a stream (before its first data).
    func streamOpened(_ stream: Int64)
    /// Bytes arrived on a stream.
    func received(stream: Int64, data: UnsafeRawBufferPointer, fin: Bool)
    /// The peer reset a stream (RESET_STREAM, wire code).
    func streamReset(stream: Int64, wireCode: UInt64)
    /// The peer asked us to stop sending on a stream (STOP_SENDING, wire code).
    func stopSending(stream: Int64, wireCode: UInt64)
    /// Both halves of a stream are done.
    func streamClosed(stream: Int64)
    /// A QUIC DATAGRAM arrived.
    func datagramReceived(_ data: UnsafeRawBufferPointer)
    /// The peer granted more streams of a kind.
    func streamCreditAvailable(bidirectional: Bool)
    /// Fewer bytes than asked for (``SessionTransport/notifyWhenUnsent(below:)``) remain unsent.
    func sendBufferDrained()
    /// The connection ended.
    func transportClosed(_ reason: SessionCloseReason)
}

extension SessionCore: TransportEventSink {}

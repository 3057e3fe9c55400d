// SPDX-License-Identifier: MIT

/// Receives the events of one ``QUICConnection``. Every call happens on the connection's loop thread.
///
/// Calls may arrive while ngtcp2 is processing a packet: the connection's methods are safe to call from
/// them (writes are queued, a close is carried out right after the current packet).
public protocol QUICConnectionDelegate: AnyObject {
    /// The handshake completed; ``QUICConnection/negotiatedALPN`` is known and streams may be opened.
    func quicConnectionDidConnect(_ connection: QUICConnection)
    /// The peer opened `stream`; called before its first data or reset.
    func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64)
    /// In-order bytes of `stream`. `data` is valid only during the call. `fin` marks the end of the stream.
    /// Receive credit for these bytes is returned to the peer when the call returns, unless
    /// ``QUICSettings/automaticFlowControlCredit`` is off (then ``QUICConnection/consume(_:bytes:)`` does it).
    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool)
    /// The peer reset its sending side of `stream` (RESET_STREAM) with `code`.
    func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64)
    /// The peer asked us to stop sending on `stream` (STOP_SENDING); queued data has been dropped.
    func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64)
    /// `stream` is fully closed in both directions; its id is no longer valid.
    func quicConnection(_ connection: QUICConnection, didCloseStream stream: Int64)
    /// A DATAGRAM frame. `data` is valid only during the call.
    func quicConnection(_ connection: QUICConnection, didReceiveDatagram data: UnsafeRawBufferPointer)
    /// The peer raised its MAX_STREAMS limit: ``QUICConnection/openStream(bidirectional:)`` may succeed again.
    func quicConnection(_ connection: QUICConnection, streamCreditAvailable bidirectional: Bool)
    /// Fewer bytes than the threshold given to ``QUICConnection/notifyWhenUnsent(below:)`` remain unsent:
    /// there is room to write more (once per request).
    func quicConnection(_ connection: QUICConnection, unsentBytesBelow threshold: Int)
    /// The connection ended. Called exactly once, and it is the last call.
    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason)
}

extension QUICConnectionDelegate {
    /// Default: nothing.
    public func quicConnectionDidConnect(_ connection: QUICConnection) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64) {}
    /// Default: nothing.
    public func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, didCloseStream stream: Int64) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, didReceiveDatagram data: UnsafeRawBufferPointer) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, streamCreditAvailable bidirectional: Bool) {}
    /// Default: nothing.
    public func quicConnection(_ connection: QUICConnection, unsentBytesBelow threshold: Int) {}
}

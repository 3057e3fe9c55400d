// SPDX-License-Identifier: MIT

/// What a ``ByteStream`` reports, on its loop's thread.
public protocol ByteStreamDelegate: AnyObject {
    /// Bytes arrived (valid only during the call).
    func byteStream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer)
    /// The bytes queued fell below the stream's low-water mark: more may be written.
    func byteStreamCanWrite(_ stream: any ByteStream)
    /// The peer closed or the stream failed (nil: an orderly end of stream). Called once; the
    /// stream is closed by then.
    func byteStream(_ stream: any ByteStream, didEnd error: String?)
}

/// An ordered, reliable byte stream on a ``QUICEventLoop``: a TCP connection (``TCPStream``) or
/// TLS over one (``TLSStream``), the carriers of qmux over WebSocket. Writes queue in user space
/// while the kernel's buffer is full; the layer above keeps ``queuedBytes`` under its own bound.
/// Loop thread only.
public protocol ByteStream: AnyObject {
    /// The loop it runs on.
    var loop: QUICEventLoop { get }
    /// Held strongly until the stream is closed, then released.
    var delegate: (any ByteStreamDelegate)? { get set }
    /// The peer's address, for messages.
    var remoteAddress: String { get }
    /// Bytes written and not yet taken by the kernel (after any encryption).
    var queuedBytes: Int { get }
    /// True once closed (by either side).
    var isClosed: Bool { get }
    /// Queues `bytes` and sends what the kernel takes now.
    func write(_ bytes: [UInt8])
    /// Asks for one ``ByteStreamDelegate/byteStreamCanWrite(_:)`` once the queue is low.
    func notifyWhenWritable()
    /// Closes after the queued bytes went out (or at once with `now`).
    func close(now: Bool)
}

extension ByteStream {
    /// Closes after the queued bytes went out.
    public func close() { close(now: false) }
}

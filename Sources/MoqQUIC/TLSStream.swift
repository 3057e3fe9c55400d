// SPDX-License-Identifier: MIT

/// TLS over a ``TCPStream``: the carrier of `wss://`. Its delegate sees plaintext; what it writes
/// is encrypted before it is queued on the socket. A client's stream reports the end of its
/// handshake through ``onEstablished``; a server's is handed over established (the relay's HTTP
/// endpoint did the handshake and read the upgrade request). Loop thread only.
public final class TLSStream: ByteStream, ByteStreamDelegate {
    public let tcp: TCPStream
    public let tls: TLSRecordLayer
    /// Held strongly until the stream is closed, then released.
    public var delegate: (any ByteStreamDelegate)?
    /// A client's handshake ended: nil once established, else why it failed (the stream is then
    /// closed and the delegate hears nothing). Called once.
    public var onEstablished: ((QUICError?) -> Void)?
    private var ended = false

    /// Runs `tls` over `tcp` (taking over its delegate). A client's handshake starts at once.
    public init(tcp: TCPStream, tls: TLSRecordLayer) {
        self.tcp = tcp
        self.tls = tls
        tcp.delegate = self
    }

    /// A client: sends the ClientHello; ``onEstablished`` follows.
    public func startHandshake() {
        do {
            try tls.start()
        } catch {
            return handshakeFailed(error)
        }
        pushOut()
    }

    public var loop: QUICEventLoop { tcp.loop }
    public var remoteAddress: String { tcp.remoteAddress }
    public var queuedBytes: Int { tcp.queuedBytes }
    /// True once the socket closed (a closing stream whose last bytes are still leaving is not yet).
    public var isClosed: Bool { tcp.isClosed }

    public func write(_ bytes: [UInt8]) {
        guard !ended, !tcp.isClosed else { return }
        do {
            try tls.send(bytes)
        } catch {
            return fail("TLS: \(error)")
        }
        pushOut()
    }

    public func notifyWhenWritable() { tcp.notifyWhenWritable() }

    public func close(now: Bool) {
        guard !ended else {
            if now { tcp.close(now: true) }  // a closing stream cut short
            return
        }
        ended = true
        delegate = nil
        onEstablished = nil
        if !now {
            tls.closeNotify()
            pushOut(evenIfEnded: true)
        }
        tcp.close(now: now)
    }

    private func pushOut(evenIfEnded: Bool = false) {
        guard tls.hasOutput, evenIfEnded || !ended else { return }
        tcp.write(tls.takeOutput())
    }

    private func handshakeFailed(_ error: QUICError) {
        let report = onEstablished
        onEstablished = nil
        ended = true
        delegate = nil
        pushOut(evenIfEnded: true)  // the alert, if any
        tcp.close(now: false)
        report?(error)
    }

    /// Ends with `error`: the delegate hears it once.
    private func fail(_ error: String?) {
        guard !ended else { return }
        if let report = onEstablished {
            onEstablished = nil
            ended = true
            delegate = nil
            tcp.close(now: true)
            report(.invalidArgument(error ?? "the connection ended during the TLS handshake"))
            return
        }
        ended = true
        let delegate = self.delegate
        self.delegate = nil
        if error == nil { tls.closeNotify() }  // the peer's close_notify, answered
        pushOut(evenIfEnded: true)
        tcp.close(now: error == nil)
        delegate?.byteStream(self, didEnd: error)
    }

    // MARK: ByteStreamDelegate (the socket)

    public func byteStream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard !ended else { return }
        let wasEstablished = tls.isEstablished
        let plaintext: [UInt8]
        do {
            plaintext = try tls.receive(bytes)
        } catch {
            if !wasEstablished, onEstablished != nil { return handshakeFailed(error) }
            return fail("TLS: \(error)")
        }
        pushOut()
        if !wasEstablished && tls.isEstablished, let report = onEstablished {
            onEstablished = nil
            report(nil)
        }
        if !plaintext.isEmpty, !ended {
            plaintext.withUnsafeBytes { delegate?.byteStream(self, didRead: $0) }
        }
        if tls.peerClosed { fail(nil) }
    }

    public func byteStreamCanWrite(_ stream: any ByteStream) {
        guard !ended else { return }
        delegate?.byteStreamCanWrite(self)
    }

    public func byteStream(_ stream: any ByteStream, didEnd error: String?) {
        guard !ended else { return }
        fail(error ?? (tls.peerClosed ? nil : "the TCP connection ended without a TLS close_notify"))
    }
}

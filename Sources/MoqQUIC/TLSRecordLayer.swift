// SPDX-License-Identifier: MIT
// TLS over a byte stream (HTTPS and wss:// on a relay's TCP port, wss:// in clients): GnuTLS's
// record layer driven without I/O. Ciphertext goes in and out through memory; the caller moves it
// to and from its socket.
internal import CNgtcp2
internal import Glibc
import MoqBase

/// TLS 1.2 or 1.3 over TCP with the ciphers GnuTLS ranks secure (`SECURE128`): what browsers and
/// rustls (moq-dev's WebSocket client) negotiate.
let streamPriority = "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE"

/// One TLS session over an ordered byte stream, without I/O: ``receive(_:)`` takes what arrived
/// from the peer and returns the plaintext it carried; ``send(_:)`` encrypts; ``takeOutput()``
/// hands over what must go to the peer (handshake messages, records, alerts).
///
/// A server presents a ``ServerIdentity`` and offers ALPN `http/1.1` (what browsers ask for on a
/// WebSocket; a client that offers nothing is served too). A client verifies the server as a QUIC
/// client does (``TLSClientConfiguration``: system CAs, a roots file, SHA-256 pins, or none) once
/// the handshake completes, before any application byte is sent.
///
/// Bounded: ciphertext waits here only until it forms a whole record (at most ~16 KiB plus what
/// one ``receive(_:)`` brought); plaintext is returned at once. Used by one thread at a time (the
/// HTTP endpoint's, then a loop's after a WebSocket upgrade hands the socket over).
public final class TLSRecordLayer: @unchecked Sendable {
    private let session: OpaquePointer
    private let ownedCredentials: OpaquePointer?
    /// Held so the credentials a server session reads outlive it.
    private let identity: ServerIdentity?
    private let verification: (config: TLSClientConfiguration, host: String)?
    /// Ciphertext from the peer not yet read by GnuTLS.
    private var inbox: [UInt8] = []
    private var inboxHead = 0
    /// Ciphertext for the peer.
    private var outbox: [UInt8] = []
    /// True once the handshake completed (and, for a client, the server's certificate was accepted).
    public private(set) var isEstablished = false
    /// True once the peer ended its side with a close_notify alert.
    public private(set) var peerClosed = false
    private var failed: QUICError?

    /// A server session presenting `identity`.
    public init(server identity: ServerIdentity) throws(QUICError) {
        var s: OpaquePointer?
        let flags =
            UInt32(GNUTLS_SERVER.rawValue) | UInt32(GNUTLS_NONBLOCK.rawValue)
            | UInt32(GNUTLS_NO_AUTO_SEND_TICKET.rawValue)
        try Sys.tls("gnutls_init", gnutls_init(&s, flags))
        guard let session = s else { throw QUICError.certificate("gnutls_init returned no session") }
        self.session = session
        ownedCredentials = nil
        self.identity = identity
        verification = nil
        try configure(alpn: "http/1.1", server: true)
        try Sys.tls(
            "gnutls_credentials_set",
            gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, UnsafeMutableRawPointer(identity.credentials)))
    }

    /// A client session for `host` (the SNI and the name checked, unless `tls.serverName` says
    /// otherwise). Call ``start()`` to produce the ClientHello.
    public init(client tls: TLSClientConfiguration, host: String) throws(QUICError) {
        let cred = try clientCredentials(tls)
        var s: OpaquePointer?
        let rc = gnutls_init(&s, UInt32(GNUTLS_CLIENT.rawValue) | UInt32(GNUTLS_NONBLOCK.rawValue))
        guard rc >= 0, let session = s else {
            gnutls_certificate_free_credentials(cred)
            throw Sys.tlsError("gnutls_init", rc)
        }
        self.session = session
        ownedCredentials = cred
        identity = nil
        verification = (tls, host)
        try configure(alpn: "http/1.1", server: false)
        try configureClient(session, credentials: cred, tls: tls, host: host)
    }

    deinit {
        gnutls_deinit(session)
        if let ownedCredentials { gnutls_certificate_free_credentials(ownedCredentials) }
    }

    private func configure(alpn: String, server: Bool) throws(QUICError) {
        try Sys.tls("gnutls_priority_set_direct", gnutls_priority_set_direct(session, streamPriority, nil))
        // No handshake timer inside GnuTLS (the caller has its own deadline), and no wait in its reads.
        gnutls_handshake_set_timeout(session, 0)
        gnutls_transport_set_ptr(session, Unmanaged.passUnretained(self).toOpaque())
        gnutls_transport_set_push_function(session, pushTrampoline)
        gnutls_transport_set_pull_function(session, pullTrampoline)
        gnutls_transport_set_pull_timeout_function(session, pullTimeoutTrampoline)
        var bytes = Array(alpn.utf8)
        let rc = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var datum = gnutls_datum_t(data: buffer.baseAddress, size: UInt32(buffer.count))
            let flags = server ? UInt32(GNUTLS_ALPN_SERVER_PRECEDENCE.rawValue) : 0
            return gnutls_alpn_set_protocols(session, &datum, 1, flags)
        }
        try Sys.tls("gnutls_alpn_set_protocols", rc)
    }

    /// A client's first flight (the ClientHello), then ``takeOutput()``.
    public func start() throws(QUICError) {
        try advance()
    }

    /// Takes ciphertext from the peer; returns the plaintext it completed (possibly none).
    /// - Throws: the TLS failure (a bad record, an alert, a refused certificate): the stream is
    ///   then done; ``takeOutput()`` may still hold the alert to send.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws(QUICError) -> [UInt8] {
        if let failed { throw failed }
        inbox.append(contentsOf: bytes)
        if !isEstablished {
            try advance()
            guard isEstablished else { return [] }
        }
        var plaintext: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while !peerClosed {
            let n = chunk.withUnsafeMutableBytes { gnutls_record_recv(session, $0.baseAddress, $0.count) }
            if n > 0 {
                plaintext += chunk[..<n]
            } else if n == 0 {
                peerClosed = true
            } else if n == Int(GNUTLS_E_AGAIN) || n == Int(GNUTLS_E_INTERRUPTED) {
                break
            } else if gnutls_error_is_fatal(Int32(n)) == 0 {
                continue  // e.g. a warning alert or a post-handshake message: the next record follows
            } else {
                throw fail(Sys.tlsError("gnutls_record_recv", Int32(n)))
            }
        }
        compactInbox()
        return plaintext
    }

    /// Encrypts `plaintext` into records (after the handshake).
    public func send(_ plaintext: [UInt8]) throws(QUICError) {
        if let failed { throw failed }
        guard isEstablished else { throw QUICError.invalidArgument("TLS: application data before the handshake") }
        var offset = 0
        while offset < plaintext.count {
            let n = plaintext.withUnsafeBytes {
                gnutls_record_send(session, $0.baseAddress! + offset, $0.count - offset)
            }
            if n > 0 {
                offset += n
            } else if n == Int(GNUTLS_E_AGAIN) || n == Int(GNUTLS_E_INTERRUPTED) {
                continue  // the push side never blocks: a retry completes it
            } else {
                throw fail(Sys.tlsError("gnutls_record_send", Int32(n)))
            }
        }
    }

    /// Ends our side with a close_notify alert (then ``takeOutput()``).
    public func closeNotify() {
        guard failed == nil, isEstablished else { return }
        _ = gnutls_bye(session, GNUTLS_SHUT_WR)
    }

    /// What must go to the peer now; empties the buffer.
    public func takeOutput() -> [UInt8] {
        defer { outbox = [] }
        return outbox
    }

    /// Whether ciphertext waits to be taken.
    public var hasOutput: Bool { !outbox.isEmpty }

    /// The protocol ALPN selected, if any.
    public var selectedALPN: String? {
        var d = gnutls_datum_t()
        guard gnutls_alpn_get_selected_protocol(session, &d) == 0, let data = d.data else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(d.size)), as: UTF8.self)
    }

    /// Drives the handshake as far as the bytes that came allow.
    private func advance() throws(QUICError) {
        // Bounded: each non-fatal return consumed a message; a peer cannot make this spin.
        for _ in 0..<64 {
            let rc = gnutls_handshake(session)
            if rc == 0 {
                if let verification, let refusal = verifyPeer(session, verification) {
                    _ = gnutls_alert_send(session, GNUTLS_AL_FATAL, GNUTLS_A_BAD_CERTIFICATE)
                    throw fail(.certificate(refusal))
                }
                isEstablished = true
                return
            }
            if rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED { return }
            if gnutls_error_is_fatal(rc) != 0 { throw fail(Sys.tlsError("gnutls_handshake", rc)) }
        }
        throw fail(.invalidArgument("TLS handshake made no progress"))
    }

    private func fail(_ error: QUICError) -> QUICError {
        failed = error
        return error
    }

    private func compactInbox() {
        if inboxHead == inbox.count {
            inbox.removeAll(keepingCapacity: true)
            inboxHead = 0
        } else if inboxHead >= 64 << 10 {
            inbox.removeFirst(inboxHead)
            inboxHead = 0
        }
    }

    // MARK: GnuTLS transport callbacks

    fileprivate func push(_ data: UnsafeRawPointer?, _ count: Int) -> Int {
        guard let data, count > 0 else { return 0 }
        outbox.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    fileprivate func pull(_ data: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        let available = inbox.count - inboxHead
        guard available > 0 else {
            gnutls_transport_set_errno(session, EAGAIN)
            return -1
        }
        guard let data else { return 0 }
        let n = min(count, available)
        inbox.withUnsafeBytes { data.copyMemory(from: $0.baseAddress! + inboxHead, byteCount: n) }
        inboxHead += n
        return n
    }

    fileprivate var buffered: Int { inbox.count - inboxHead }
}

private func layer(_ pointer: UnsafeMutableRawPointer?) -> TLSRecordLayer? {
    pointer.map { Unmanaged<TLSRecordLayer>.fromOpaque($0).takeUnretainedValue() }
}

private let pushTrampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int) -> Int = {
    pointer, data, count in
    layer(pointer)?.push(data, count) ?? -1
}

private let pullTrampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int) -> Int = {
    pointer, data, count in
    layer(pointer)?.pull(data, count) ?? -1
}

/// Never waits: whether bytes are buffered now.
private let pullTimeoutTrampoline: @convention(c) (UnsafeMutableRawPointer?, UInt32) -> Int32 = { pointer, _ in
    (layer(pointer)?.buffered ?? 0) > 0 ? 1 : 0
}

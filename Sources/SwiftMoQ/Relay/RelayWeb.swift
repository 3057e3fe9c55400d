// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 endpoint on TCP beside a relay's QUIC port, as moq-relay's: one request per
/// connection, answered by `handler` on this endpoint's own thread, then closed. A connection whose
/// first byte starts a TLS handshake (0x16) is served over TLS with the relay's certificate
/// (HTTPS and `wss://` on the same port), any other as plain HTTP.
///
/// Hostile clients are bounded: at most ``maxConnections`` at once (more wait in the kernel's
/// backlog), a request head of at most 8 KiB, 5 s to finish the TLS handshake, send the head and
/// take the answer.
final class RelayWeb: @unchecked Sendable {
    static let maxConnections = 64
    static let timeoutNs: UInt64 = 5_000_000_000

    /// The TCP port it listens on.
    let port: UInt16
    private let listener: Int32
    /// A pipe: ``stop()`` writes to its end 1 to wake the thread's poll.
    private let wake: (read: Int32, write: Int32)
    private let handler: @Sendable (HTTPRequestHead) -> HTTPResponse
    /// Takes a WebSocket upgrade (a request with `Upgrade:`): returns nil when it took over the
    /// socket, or the response that refuses it.
    private let upgrade: (@Sendable (HTTPRequestHead, HandOff) -> HTTPResponse?)?
    /// What TLS connections are presented (the relay's current certificate); nil: plain HTTP only.
    private let tlsIdentity: (@Sendable () -> ServerIdentity?)?
    private let stopping = Atomic(false)
    private var thread: pthread_t?
    private let finished = Lock(false)

    /// A socket whose WebSocket upgrade was accepted, as the session takes it over.
    struct HandOff: @unchecked Sendable {
        let fd: Int32
        /// What the client sent after its request head (plaintext).
        let leftover: [UInt8]
        /// The connection's TLS session (established), or nil for plain HTTP.
        let tls: TLSRecordLayer?
        /// Bytes for the client this endpoint had not written yet (TLS handshake records).
        let unsent: [UInt8]
    }

    private struct Client {
        let fd: Int32
        /// Request bytes (plaintext).
        var input: [UInt8] = []
        var output: [UInt8] = []
        var written = 0
        let deadline: UInt64
        /// The first bytes were seen (TLS or not is decided).
        var sniffed = false
        var tls: TLSRecordLayer?
        /// The answer is queued: the connection closes once it left.
        var answered = false
        /// The socket went to a WebSocket session: not closed here.
        var handedOff = false
    }

    /// True when `error` is this endpoint's "address already in use" (another socket holds the TCP port).
    static func isAddressInUse(_ error: MoqError) -> Bool {
        guard case .configuration(let text) = error else { return false }
        return text.hasPrefix("HTTP endpoint: cannot listen") && text.hasSuffix(String(cString: strerror(EADDRINUSE)))
    }

    /// Listens on `host:port` (TCP).
    /// - Throws: ``MoqError/configuration(_:)`` when the address cannot be bound (e.g. in use).
    init(
        host: String, port: UInt16,
        tlsIdentity: (@Sendable () -> ServerIdentity?)? = nil,
        upgrade: (@Sendable (HTTPRequestHead, HandOff) -> HTTPResponse?)? = nil,
        handler: @escaping @Sendable (HTTPRequestHead) -> HTTPResponse
    ) throws(MoqError) {
        self.handler = handler
        self.upgrade = upgrade
        self.tlsIdentity = tlsIdentity
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else {
            throw .configuration("HTTP endpoint: cannot resolve \(host)")
        }
        defer { freeaddrinfo(info) }
        let fd = socket(
            first.pointee.ai_family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .configuration("HTTP endpoint: socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0, listen(fd, 64) == 0 else {
            let text = String(cString: strerror(errno))
            close(fd)
            throw .configuration("HTTP endpoint: cannot listen on TCP \(host):\(port): \(text)")
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        // sin_port and sin6_port both sit at offset 2.
        let boundPort = withUnsafeBytes(of: &address) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        listener = fd
        self.port = boundPort
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            close(fd)
            throw .configuration("HTTP endpoint: pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends { Self.configure(end) }
        wake = (ends[0], ends[1])
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        let rc = pthread_create(
            &t, nil,
            { raw in
                let me = Unmanaged<RelayWeb>.fromOpaque(raw!).takeRetainedValue()
                me.run()
                return nil
            }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            throw .configuration("HTTP endpoint: cannot start its thread (error \(rc))")
        }
        thread = t
    }

    /// Stops listening and closes every connection; returns once the thread has ended.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt8 = 1
        _ = write(wake.write, &one, 1)
        // Joined unless called from the endpoint's own thread (a handler that dropped the last
        // reference to the relay): that thread is detached and ends on its own.
        if let thread {
            if pthread_equal(thread, pthread_self()) == 0 {
                pthread_join(thread, nil)
            } else {
                pthread_detach(thread)
            }
        }
        // The port is released now, not when the object goes: clients are refused at once and a
        // new relay in this process may listen there again.
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit {
        if !stopping.load(ordering: .acquiring) { close(listener) }
        close(wake.read)
        close(wake.write)
    }

    /// Non-blocking and closed on exec.
    private static func configure(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    private static func now() -> UInt64 { SystemClock().now() }

    private func run() {
        var clients: [Client] = []
        defer { for c in clients { close(c.fd) } }
        // Out of file descriptors: accepting pauses a little instead of spinning on a readable listener.
        var acceptPausedUntil: UInt64 = 0
        while !stopping.load(ordering: .acquiring) {
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            if clients.count < Self.maxConnections && Self.now() >= acceptPausedUntil {
                fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
            }
            let base = fds.count
            for c in clients {
                let events = (c.answered ? 0 : POLLIN) | (c.output.isEmpty ? 0 : POLLOUT)
                fds.append(pollfd(fd: c.fd, events: Int16(events), revents: 0))
            }
            _ = poll(&fds, nfds_t(fds.count), 250)
            if stopping.load(ordering: .acquiring) { return }
            let now = Self.now()
            var keep: [Client] = []
            for (i, var client) in clients.enumerated() {
                let revents = fds[base + i].revents
                var done = now > client.deadline || revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
                if !done && !client.answered && revents & Int16(POLLIN) != 0 { done = !read(&client) }
                if !done && !client.output.isEmpty && revents & Int16(POLLOUT) != 0 { done = !flush(&client) }
                if done {
                    if !client.handedOff { close(client.fd) }
                } else {
                    keep.append(client)
                }
            }
            clients = keep
            if fds.count > 1, fds[1].fd == listener, fds[1].revents & Int16(POLLIN) != 0 {
                while clients.count < Self.maxConnections {
                    let fd = accept(listener, nil, nil)
                    guard fd >= 0 else {
                        if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                            acceptPausedUntil = now + 100_000_000
                        }
                        break
                    }
                    Self.configure(fd)
                    clients.append(Client(fd: fd, deadline: now + Self.timeoutNs))
                }
            }
        }
    }

    /// Reads what arrived (through TLS when the connection started a handshake); answers once the
    /// head is complete. False when the connection is done.
    private func read(_ client: inout Client) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { return false }
        if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
        if !client.sniffed {
            client.sniffed = true
            // A TLS record of type handshake: HTTPS or wss://.
            if chunk[0] == 0x16, let identity = tlsIdentity?() ?? nil {
                do {
                    client.tls = try TLSRecordLayer(server: identity)
                } catch {
                    return false
                }
            }
        }
        if let tls = client.tls {
            let plaintext: [UInt8]
            do {
                plaintext = try chunk.withUnsafeBytes { bytes throws(QUICError) in
                    try tls.receive(UnsafeRawBufferPointer(rebasing: bytes[..<n]))
                }
            } catch {
                // The alert, if any, then the end.
                client.output += tls.takeOutput()
                client.answered = true
                return flush(&client)
            }
            client.output += tls.takeOutput()
            // At most one read's worth (4 KiB) at a time: the head's bound (8 KiB, then 431) holds as for HTTP.
            client.input += plaintext
            if client.input.isEmpty { return flush(&client) }  // handshake records only
        } else {
            client.input += chunk[..<n]
        }
        switch HTTPRequestHead.parse(client.input) {
        case .incomplete: return flush(&client)
        case .invalid(let status):
            answer(&client, HTTPResponse(status: status, body: "\(HTTPResponse.reason(status))\n").encoded())
        case .request(let head):
            var response: HTTPResponse
            if head.method == "GET", head.headers["upgrade"] != nil, let upgrade {
                let end = HTTPRequestHead.headEnd(client.input) ?? client.input.count
                let handOff = HandOff(
                    fd: client.fd, leftover: Array(client.input[end...]), tls: client.tls,
                    unsent: Array(client.output[client.written...]))
                guard let refusal = upgrade(head, handOff) else {
                    client.handedOff = true
                    return false
                }
                response = refusal
            } else if head.method == "GET" || head.method == "HEAD" {
                response = handler(head)
            } else {
                response = HTTPResponse(status: 405, body: "only GET\n")
            }
            answer(&client, response.encoded(includeBody: head.method != "HEAD"))
        }
        client.input = []
        return flush(&client)
    }

    /// Queues the answer (encrypted over TLS, with a close_notify after it); the connection closes
    /// once it left.
    private func answer(_ client: inout Client, _ bytes: [UInt8]) {
        client.answered = true
        if let tls = client.tls {
            try? tls.send(bytes)
            tls.closeNotify()
            client.output += tls.takeOutput()
        } else {
            client.output += bytes
        }
    }

    /// Writes what is pending; false when the answer went out (the connection then closes) or it failed.
    private func flush(_ client: inout Client) -> Bool {
        while client.written < client.output.count {
            let n = client.output.withUnsafeBytes {
                send(client.fd, $0.baseAddress! + client.written, $0.count - client.written, Int32(MSG_NOSIGNAL))
            }
            if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            client.written += n
        }
        client.output = []
        client.written = 0
        guard client.answered else { return true }  // a TLS handshake in progress
        shutdown(client.fd, Int32(SHUT_WR))
        return false
    }
}

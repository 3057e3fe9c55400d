// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc

/// A connected, non-blocking TCP socket on a ``QUICEventLoop`` (the carrier of qmux over
/// WebSocket): reads are handed to the delegate as they come; writes queue in user space while
/// the kernel's buffer is full. The layer above keeps ``queuedBytes`` under its own bound (it asks
/// for ``ByteStreamDelegate/byteStreamCanWrite(_:)``). Loop thread only.
public final class TCPStream: LoopSource, ByteStream {
    public let loop: QUICEventLoop
    /// Held strongly until the stream is closed, then released (so a delegate that holds its
    /// stream forms no lasting cycle).
    public var delegate: (any ByteStreamDelegate)?
    /// The peer's address, for messages.
    public let remoteAddress: String
    /// Below this many queued bytes the delegate hears ``ByteStreamDelegate/byteStreamCanWrite(_:)``.
    public static let lowWater = 64 << 10
    private let fd: Int32
    private var output: [UInt8] = []
    private var outputHead = 0
    private var writeInterest = false
    private var wantsCanWrite = false
    private var closeAfterFlush = false
    public private(set) var isClosed = false
    private var readBuffer = [UInt8](repeating: 0, count: 64 << 10)

    /// Takes over a connected socket (made non-blocking here). On the loop's thread.
    public init(adopting fd: Int32, loop: QUICEventLoop, remoteAddress: String) throws(QUICError) {
        self.fd = fd
        self.loop = loop
        self.remoteAddress = remoteAddress
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        do {
            try loop.register(fd, self)
        } catch {
            Glibc.close(fd)
            isClosed = true
            throw error
        }
    }

    /// Bytes written and not yet taken by the kernel.
    public var queuedBytes: Int { output.count - outputHead }

    /// Queues `bytes` and sends what the kernel takes now.
    public func write(_ bytes: [UInt8]) {
        guard !isClosed, !closeAfterFlush else { return }
        output += bytes
        flush()
    }

    /// Asks for one ``ByteStreamDelegate/byteStreamCanWrite(_:)`` once the queue is below ``lowWater``.
    public func notifyWhenWritable() {
        wantsCanWrite = true
        if queuedBytes < Self.lowWater { flush() }
    }

    /// Closes after the queued bytes went out (or at once with `now`).
    public func close(now: Bool) {
        guard !isClosed else { return }
        if now || queuedBytes == 0 {
            shut()
        } else {
            closeAfterFlush = true
        }
    }

    private func shut() {
        guard !isClosed else { return }
        isClosed = true
        delegate = nil
        loop.unregister(fd)
        Glibc.close(fd)
    }

    private func end(_ error: String?) {
        guard !isClosed else { return }
        let delegate = self.delegate
        shut()
        delegate?.byteStream(self, didEnd: error)
    }

    private func flush() {
        while queuedBytes > 0 {
            let n = output.withUnsafeBytes {
                send(fd, $0.baseAddress! + outputHead, $0.count - outputHead, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                end(String(cString: strerror(errno)))
                return
            }
            outputHead += n
        }
        if outputHead > 0 && (outputHead == output.count || outputHead >= 1 << 20) {
            output.removeFirst(outputHead)
            outputHead = 0
        }
        let blocked = queuedBytes > 0
        if blocked != writeInterest {
            writeInterest = blocked
            loop.setWriteInterest(fd, blocked)
        }
        if !blocked && closeAfterFlush {
            shut()
            return
        }
        if wantsCanWrite && queuedBytes < Self.lowWater {
            wantsCanWrite = false
            delegate?.byteStreamCanWrite(self)
        }
    }

    func writable() { flush() }

    func readable() {
        // Bounded so one busy socket cannot starve the loop's other work.
        for _ in 0..<16 {
            guard !isClosed else { return }
            let n = readBuffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 {
                end(nil)
                return
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                end(String(cString: strerror(errno)))
                return
            }
            // Acknowledge at once: a peer without TCP_NODELAY (moq-dev's WebSocket client) holds its
            // next small write until our ACK, and a delayed ACK made that 40 ms.
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &one, socklen_t(MemoryLayout<Int32>.size))
            readBuffer.withUnsafeBytes {
                delegate?.byteStream(self, didRead: UnsafeRawBufferPointer(rebasing: $0[..<n]))
            }
        }
    }
}

extension TCPStream {
    /// Connects to `host:port` over TCP (name resolution on a helper thread, the connect itself on
    /// `loop`), then calls `completion` on the loop's thread with the connected stream (its
    /// delegate to be set by the caller) or the error.
    public static func connect(
        host: String, port: UInt16, loop: QUICEventLoop,
        completion: @escaping @Sendable (Result<TCPStream, QUICError>) -> Void
    ) {
        spawnDetached {
            let addresses: [SocketAddress]
            do throws(QUICError) {
                addresses = try SocketAddress.resolve(host: host, port: port)
            } catch {
                loop.execute { completion(.failure(error)) }
                return
            }
            loop.execute { TCPConnector(loop: loop, addresses: addresses, completion: completion).next(nil) }
        }
    }
}

/// A non-blocking connect to each resolved address in turn. Loop thread only.
final class TCPConnector: LoopSource {
    let loop: QUICEventLoop
    private var addresses: [SocketAddress]
    private let completion: @Sendable (Result<TCPStream, QUICError>) -> Void
    private var fd: Int32 = -1
    private var current: SocketAddress?
    /// Held by itself while a connect is in progress (the loop holds sources, but only by fd).
    private var keepAlive: TCPConnector?

    init(
        loop: QUICEventLoop, addresses: [SocketAddress],
        completion: @escaping @Sendable (Result<TCPStream, QUICError>) -> Void
    ) {
        self.loop = loop
        self.addresses = addresses
        self.completion = completion
    }

    /// Tries the next address, or reports `lastError` (an errno) when none is left.
    func next(_ lastError: Int32?) {
        keepAlive = self
        fd = -1
        while !addresses.isEmpty {
            let address = addresses.removeFirst()
            let s = socket(
                address.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard s >= 0 else { continue }
            let rc = Glibc.connect(s, address.sockaddr, address.length)
            if rc == 0 || errno == EINPROGRESS {
                fd = s
                current = address
                do {
                    try loop.register(s, self)
                    loop.setWriteInterest(s, true)
                    return
                } catch {
                    Glibc.close(s)
                    continue
                }
            }
            let e = errno
            Glibc.close(s)
            return next(e)
        }
        keepAlive = nil
        let e = lastError ?? EHOSTUNREACH
        completion(.failure(.system(function: "connect", errno: e, message: String(cString: strerror(e)))))
    }

    func writable() {
        // Handled already (the loop may call readable() after writable() for the same event).
        guard fd >= 0 else { return }
        let s = fd
        fd = -1
        loop.unregister(s)
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else {
            Glibc.close(s)
            // The next address on the next turn: its socket may reuse this fd number, and the loop
            // has more events of this one to hand out.
            let me = LoopOnly(self)
            let failed = error
            loop.execute { me.value.next(failed) }
            return
        }
        keepAlive = nil
        do {
            completion(.success(try TCPStream(adopting: s, loop: loop, remoteAddress: current?.description ?? "")))
        } catch {
            completion(.failure(error))
        }
    }

    func readable() {
        // A failed connect reports EPOLLERR/EPOLLHUP (seen here): the same check as writable.
        writable()
    }
}

/// A loop-thread object carried through `execute` (it is only touched on that thread).
private final class LoopOnly<T: AnyObject>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

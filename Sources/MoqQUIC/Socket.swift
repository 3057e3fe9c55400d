// SPDX-License-Identifier: MIT
// Non-blocking UDP sockets and socket addresses. All libc calls go through `Sys` for error mapping.
internal import CNgtcp2
internal import Glibc

/// An IPv4 or IPv6 socket address in a heap cell with a stable address (ngtcp2 keeps pointers to it
/// only for the duration of a call, but the cell lets paths be built without copies).
final class SocketAddress: CustomStringConvertible, @unchecked Sendable {
    let storage: UnsafeMutablePointer<sockaddr_storage>
    var length: socklen_t

    init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: sockaddr_storage())
        length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    }

    convenience init(copying other: UnsafePointer<sockaddr_storage>, length: socklen_t) {
        self.init()
        storage.pointee = other.pointee
        self.length = length
    }

    deinit { storage.deallocate() }

    var sockaddr: UnsafeMutablePointer<Glibc.sockaddr> { moq_sockaddr_mut(storage) }
    var family: Int32 { Int32(storage.pointee.ss_family) }

    func assign(_ other: SocketAddress) {
        storage.pointee = other.storage.pointee
        length = other.length
    }

    func equals(_ other: UnsafePointer<sockaddr_storage>, _ otherLength: socklen_t) -> Bool {
        length == otherLength && memcmp(storage, other, Int(length)) == 0
    }

    /// The port, host byte order.
    var port: UInt16 {
        switch family {
        case AF_INET:
            return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
        case AF_INET6:
            return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin6_port)
            }
        default:
            return 0
        }
    }

    /// The address without the port (4 or 16 bytes): what "the same source" means for limits.
    var hostKey: [UInt8] {
        switch family {
        case AF_INET:
            return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                withUnsafeBytes(of: sin.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                withUnsafeBytes(of: sin.pointee.sin6_addr) { Array($0) }
            }
        default:
            return []
        }
    }

    /// "1.2.3.4:5" or "[::1]:5".
    var description: String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch family {
        case AF_INET:
            storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var a = sin.pointee.sin_addr
                _ = inet_ntop(AF_INET, &a, &buf, socklen_t(buf.count))
            }
            return "\(Self.string(buf)):\(port)"
        case AF_INET6:
            storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                var a = sin.pointee.sin6_addr
                _ = inet_ntop(AF_INET6, &a, &buf, socklen_t(buf.count))
            }
            return "[\(Self.string(buf))]:\(port)"
        default:
            return "<unknown address family \(family)>"
        }
    }

    private static func string(_ buf: [CChar]) -> String {
        String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True if `host` is an IPv4 or IPv6 literal (SNI must then be omitted).
    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Resolves `host`:`port` with `getaddrinfo` (blocking) and returns every UDP address, in resolver order.
    static func resolve(host: String, port: UInt16) throws(QUICError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        if rc != 0 {
            throw QUICError.resolve(host: host, message: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(result) }
        var out: [SocketAddress] = []
        var cursor = result
        while let ai = cursor {
            if let addr = ai.pointee.ai_addr, ai.pointee.ai_family == AF_INET || ai.pointee.ai_family == AF_INET6 {
                let a = SocketAddress()
                memcpy(a.storage, addr, Int(ai.pointee.ai_addrlen))
                a.length = ai.pointee.ai_addrlen
                out.append(a)
            }
            cursor = ai.pointee.ai_next
        }
        if out.isEmpty { throw QUICError.resolve(host: host, message: "no IPv4 or IPv6 address") }
        return out
    }
}

/// What `UDPSocket.send` achieved.
enum SendOutcome {
    case sent
    case wouldBlock
    case failed(Int32)
}

/// Receives the datagrams of one socket. Loop thread only.
protocol DatagramReceiver: AnyObject {
    func receive(_ packet: UnsafeRawBufferPointer, from: SocketAddress)
    /// A socket error (e.g. ICMP unreachable on a connected socket) surfaced by `recvfrom`.
    func socketError(_ code: Int32)
}

/// A non-blocking UDP socket registered with a loop. Loop thread only after `start`.
final class UDPSocket: LoopSource {
    let fd: Int32
    let local = SocketAddress()
    unowned let loop: QUICEventLoop
    weak var receiver: (any DatagramReceiver)?
    private(set) var isWriteBlocked = false
    private var waiters: [QUICConnection] = []
    private var closed = false
    private var sends = 0
    private let from = SocketAddress()
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    /// Creates a socket of the family of `address`, binds it (server) or connects it (client).
    /// `reusePort`: several sockets share the address (one per event loop of a sharded server).
    init(
        loop: QUICEventLoop, bind address: SocketAddress?, connect remote: SocketAddress?, reusePort: Bool = false
    ) throws(QUICError) {
        self.loop = loop
        let family = (address ?? remote)!.family
        let s = socket(family, Int32(SOCK_DGRAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        if s < 0 {
            buffer.deallocate()
            throw Sys.errnoError("socket")
        }
        fd = s
        do {
            var one: Int32 = 1
            if family == AF_INET6 {
                // Dual-stack off: an explicit v6 address means v6.
                try Sys.check("setsockopt(IPV6_V6ONLY)") { setsockopt(s, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, 4) }
            }
            var size: Int32 = 4 << 20
            _ = setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, 4)
            _ = setsockopt(s, SOL_SOCKET, SO_SNDBUF, &size, 4)
            // GRO: runs of datagrams from one peer arrive in one read (split in `readable`).
            // Kernels without it refuse the option, and datagrams then come one by one.
            _ = setsockopt(s, SOL_UDP, UDP_GRO, &one, 4)
            if reusePort {
                try Sys.check("setsockopt(SO_REUSEPORT)") { setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, 4) }
            }
            if let address {
                try Sys.check("bind(\(address))") { bind(s, address.sockaddr, address.length) }
            }
            if let remote {
                try Sys.check("connect(\(remote))") { connect(s, remote.sockaddr, remote.length) }
            }
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            try Sys.check("getsockname") { getsockname(s, local.sockaddr, &len) }
            local.length = len
        } catch {
            // Every stored property is set by now, so `deinit` runs for this instance and frees the
            // buffer: freeing it here as well was the double free of a relay whose UDP port was taken.
            Glibc.close(s)
            closed = true
            throw error
        }
    }

    deinit {
        if !closed { Glibc.close(fd) }
        buffer.deallocate()
    }

    /// Steers every datagram arriving at this socket's SO_REUSEPORT group to the socket whose index
    /// (in bind order) is the first byte of its destination connection ID modulo `shards`: short
    /// headers carry it at byte 1, long headers at byte 6. A connection's packets reach the loop that
    /// holds it whatever address they come from (a NAT rebinding changes the 4-tuple, which the
    /// kernel's default hash would follow, not the connection ID). A classic BPF program
    /// (SO_ATTACH_REUSEPORT_CBPF), which needs no privilege.
    func steerByConnectionID(shards: Int) throws(QUICError) {
        // (code, jt, jf, k), as struct sock_filter.
        let program: [(UInt16, UInt8, UInt8, UInt32)] = [
            (0x30, 0, 0, 0),  // A = byte[0]                      (BPF_LD|BPF_B|BPF_ABS)
            (0x45, 0, 2, 0x80),  // if A & 0x80 (long) next, else +2  (BPF_JMP|BPF_JSET|BPF_K)
            (0x30, 0, 0, 6),  // A = byte[6]: the DCID's first byte in a long header
            (0x05, 0, 0, 1),  // skip the next                    (BPF_JMP|BPF_JA)
            (0x30, 0, 0, 1),  // A = byte[1]: the DCID's first byte in a short header
            (0x94, 0, 0, UInt32(shards)),  // A %= shards            (BPF_ALU|BPF_MOD|BPF_K)
            (0x16, 0, 0, 0),  // return A                         (BPF_RET|BPF_A)
        ]
        var filters = [UInt8](repeating: 0, count: program.count * 8)
        for (i, (code, jt, jf, k)) in program.enumerated() {
            withUnsafeBytes(of: code.littleEndian) { filters.replaceSubrange(i * 8..<i * 8 + 2, with: $0) }
            filters[i * 8 + 2] = jt
            filters[i * 8 + 3] = jf
            withUnsafeBytes(of: k.littleEndian) { filters.replaceSubrange(i * 8 + 4..<i * 8 + 8, with: $0) }
        }
        let soAttachReuseportCBPF: Int32 = 51
        let rc = filters.withUnsafeBytes { instructions -> Int32 in
            // struct sock_fprog { unsigned short len; struct sock_filter *filter; }
            var fprog = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: UInt16(program.count)) { fprog.replaceSubrange(0..<2, with: $0) }
            withUnsafeBytes(of: UInt(bitPattern: instructions.baseAddress)) { fprog.replaceSubrange(8..<16, with: $0) }
            return fprog.withUnsafeBytes { raw in
                setsockopt(fd, SOL_SOCKET, soAttachReuseportCBPF, raw.baseAddress, socklen_t(raw.count))
            }
        }
        if rc != 0 { throw Sys.errnoError("setsockopt(SO_ATTACH_REUSEPORT_CBPF)") }
    }

    func start() throws(QUICError) {
        if loop.debugNoSegmentation { segmentationOffload = false }
        try loop.register(fd, self)
    }

    func close() {
        guard !closed else { return }
        closed = true
        loop.unregister(fd)
        Glibc.close(fd)
        waiters.removeAll()
    }

    /// Whether the kernel accepts segmented sends (UDP_SEGMENT); cleared at the first refusal.
    private(set) var segmentationOffload = true

    /// The most datagrams, and bytes, one segmented send may carry (the kernel's limits).
    static let maxSegments = 64
    static let maxSegmentedBytes = 65_000

    /// Sends one datagram, or with `segment` > 0 a batch of datagrams of `segment` bytes each
    /// (the last may be shorter) in one system call. `to` is nil on a connected socket.
    func send(
        _ packet: UnsafeRawBufferPointer, to: UnsafePointer<Glibc.sockaddr>?, length: socklen_t, segment: Int = 0
    ) -> SendOutcome {
        if closed { return .failed(EBADF) }
        if loop.debugWouldBlockEvery > 0 {
            sends += 1
            if sends % loop.debugWouldBlockEvery == 0 { return .wouldBlock }
        }
        let batched = segment > 0 && packet.count > segment
        if batched && !segmentationOffload { return sendEach(packet, to: to, length: length, segment: segment) }
        while true {
            let n = moq_udp_send(fd, packet.baseAddress, packet.count, to, length, UInt16(batched ? segment : 0))
            if n >= 0 { return .sent }
            let e = errno
            switch e {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ENOBUFS: return .wouldBlock
            case EIO, EINVAL, EOPNOTSUPP:
                guard batched else { return .failed(e) }
                // No segmentation offload on this path (e.g. no checksum offload): one by one from now on.
                segmentationOffload = false
                return sendEach(packet, to: to, length: length, segment: segment)
            default: return .failed(e)
            }
        }
    }

    /// A batch as separate datagrams. Blocked after the first, the rest is dropped as a full
    /// queue would drop it (QUIC declares it lost and sends again).
    private func sendEach(
        _ packet: UnsafeRawBufferPointer, to: UnsafePointer<Glibc.sockaddr>?, length: socklen_t, segment: Int
    ) -> SendOutcome {
        var offset = 0
        while offset < packet.count {
            let end = min(offset + segment, packet.count)
            switch send(UnsafeRawBufferPointer(rebasing: packet[offset..<end]), to: to, length: length) {
            case .sent: offset = end
            case .wouldBlock: return offset == 0 ? .wouldBlock : .sent
            case .failed(let e): return .failed(e)
            }
        }
        return .sent
    }

    /// Parks `connection` until the socket is writable again.
    func waitForWritable(_ connection: QUICConnection) {
        if !isWriteBlocked {
            isWriteBlocked = true
            loop.setWriteInterest(fd, true)
        }
        if !waiters.contains(where: { $0 === connection }) { waiters.append(connection) }
    }

    func writable() {
        guard isWriteBlocked else { return }
        isWriteBlocked = false
        loop.setWriteInterest(fd, false)
        let w = waiters
        waiters.removeAll()
        for c in w { loop.markDirty(c) }
    }

    func readable() {
        // Bounded so one busy socket cannot starve timers and other sockets.
        for _ in 0..<256 {
            if closed { return }
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            var segment: Int32 = 0
            let n = moq_udp_recv(fd, buffer.baseAddress, buffer.count, from.storage, &len, &segment)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                if e == EAGAIN || e == EWOULDBLOCK { return }
                receiver?.socketError(e)
                continue
            }
            from.length = len
            // GRO may have joined several datagrams of `segment` bytes (the last may be shorter).
            let step = segment > 0 ? Int(segment) : n
            var offset = 0
            repeat {
                let end = min(offset + step, n)
                receiver?.receive(UnsafeRawBufferPointer(rebasing: buffer[offset..<end]), from: from)
                offset = end
            } while offset < n && !closed
        }
    }
}

/// Runs `body` on a new detached thread (used for blocking name resolution).
package func spawnDetached(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var tid: pthread_t = 0
    let rc = pthread_create(
        &tid, nil,
        { arg in
            let b = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            b.body()
            return nil
        }, box)
    if rc == 0 {
        pthread_detach(tid)
    } else {
        Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
    }
}

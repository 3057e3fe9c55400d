// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc
// A QUIC server: one UDP socket, connections routed by destination connection ID.
import MoqSync

/// Where a server's connections live when several event loops share one port: loop `index` of
/// `count`. Its connection IDs start with a byte congruent to `index` modulo `count`, which the
/// kernel's steering program (``UDPSocket/steerByConnectionID(shards:)``) reads.
public struct QUICShard: Sendable, Equatable {
    public let index: Int
    public let count: Int

    /// The only loop.
    public static let single = QUICShard(index: 0, count: 1)

    /// Rewrites `byte` (a random CID's first byte) to one this shard's steering selects, keeping
    /// the rest of its randomness.
    func firstByte(_ byte: UInt8) -> UInt8 {
        guard count > 1 else { return byte }
        let slots = 256 / count
        return UInt8((Int(byte) % slots) * count + index)
    }
}

/// Accepts QUIC connections on one UDP socket (one of a group of sockets on one port, one per
/// event loop, when sharded: ``listen(host:port:identity:settings:loops:accept:)``).
///
/// Thread rule: `listen`, `localPort` and `close` may be called from any thread; everything else runs on
/// the loop thread.
public final class QUICServer: @unchecked Sendable, DatagramReceiver {
    /// The UDP port the server is bound to (useful after listening on port 0).
    public let localPort: UInt16

    private let loop: QUICEventLoop
    /// What new connections present (replaced by ``replaceIdentity(_:)``; loop thread only).
    private var identity: ServerIdentity
    private let settings: QUICSettings
    private let accept: (QUICConnection) -> (any QUICConnectionDelegate)?
    private let socket: UDPSocket
    private var routes: [CIDKey: QUICConnection] = [:]
    private var live: [ObjectIdentifier: QUICConnection] = [:]
    private var closed = false
    /// Keys Retry tokens (random per server: tokens do not survive a restart, which only costs a
    /// client one more round trip).
    private let tokenSecret: [UInt8]
    /// Which loop of a sharded server this is.
    let shard: QUICShard
    private let counters = Lock(QUICServerStats())
    /// Server connection IDs are this long (the short-header DCID length ngtcp2 must be told).
    static let cidLength = 18
    /// How long a Retry token is accepted.
    static let retryTokenLifetime: UInt64 = 10_000_000_000
    /// The smallest datagram an Initial (or anything answered with Version Negotiation) may come in.
    static let minInitialDatagram = 1200

    /// Presents `identity` to connections that start from now on (a rotated certificate); those
    /// already open keep theirs. Any thread.
    public func replaceIdentity(_ identity: ServerIdentity) {
        let box = WeakReference(self)
        loop.execute { box.value?.identity = identity }
    }

    /// What the server did with packets that were not connections yet (any thread).
    public var stats: QUICServerStats { counters.withLock { $0 } }

    private init(
        loop: QUICEventLoop, identity: ServerIdentity, settings: QUICSettings, socket: UDPSocket,
        shard: QUICShard = .single, tokenSecret: [UInt8]? = nil,
        accept: @escaping (QUICConnection) -> (any QUICConnectionDelegate)?
    ) {
        self.loop = loop
        self.identity = identity
        self.settings = settings
        self.socket = socket
        self.accept = accept
        self.shard = shard
        self.localPort = socket.local.port
        self.tokenSecret = tokenSecret ?? Self.newTokenSecret()
    }

    static func newTokenSecret() -> [UInt8] {
        var secret = [UInt8](repeating: 0, count: 32)
        secret.withUnsafeMutableBytes { Sys.random($0) }
        return secret
    }

    /// Binds `host`:`port` (0 = ephemeral) and starts accepting.
    ///
    /// `accept` runs on the loop thread for each new connection, before its handshake; return the delegate
    /// for it, or nil to refuse it (CONNECTION_REFUSED). Connections beyond ``QUICSettings/maxConnections`` are
    /// dropped silently.
    /// - Throws: `QUICError` for resolution, `socket`, `bind` or invalid ALPN settings.
    public static func listen(
        host: String, port: UInt16, identity: ServerIdentity, settings: QUICSettings, loop: QUICEventLoop,
        accept: @escaping (QUICConnection) -> (any QUICConnectionDelegate)?
    ) throws(QUICError) -> QUICServer {
        try TLSSession.validateALPN(settings.alpn)
        let address = try SocketAddress.resolve(host: host, port: port)[0]
        let socket = try UDPSocket(loop: loop, bind: address, connect: nil)
        let server = QUICServer(loop: loop, identity: identity, settings: settings, socket: socket, accept: accept)
        socket.receiver = server
        if loop.isCurrentThread {
            try socket.start()
            loop.add(server)
        } else {
            loop.execute { server.startOnLoop() }
        }
        return server
    }

    /// Listens on `host`:`port` with one socket per loop of `loops` (SO_REUSEPORT), the kernel
    /// steering each datagram to the loop that holds its connection by the connection ID's first
    /// byte (so a NAT rebinding does not move it). `accept` gets the shard's index. Limits
    /// (connections, handshakes, the Retry threshold) are shared out evenly between the loops; a
    /// Retry token made by one loop is accepted by any.
    /// - Throws: `QUICError` as ``listen(host:port:identity:settings:loop:accept:)``, or for the
    ///   steering program.
    public static func listen(
        host: String, port: UInt16, identity: ServerIdentity, settings: QUICSettings, loops: [QUICEventLoop],
        accept: @escaping (Int, QUICConnection) -> (any QUICConnectionDelegate)?
    ) throws(QUICError) -> [QUICServer] {
        guard loops.count > 1 else {
            guard let only = loops.first else { throw QUICError.invalidArgument("no event loop to listen on") }
            return [
                try listen(host: host, port: port, identity: identity, settings: settings, loop: only) { accept(0, $0) }
            ]
        }
        try TLSSession.validateALPN(settings.alpn)
        var address = try SocketAddress.resolve(host: host, port: port)[0]
        var shared = settings
        let n = loops.count
        shared.maxConnections = (settings.maxConnections + n - 1) / n
        shared.maxHandshakesPerAddress = (settings.maxHandshakesPerAddress + n - 1) / n
        shared.retryThreshold = (settings.retryThreshold + n - 1) / n
        let secret = newTokenSecret()
        var sockets: [UDPSocket] = []
        for loop in loops {
            let socket = try UDPSocket(loop: loop, bind: address, connect: nil, reusePort: true)
            if sockets.isEmpty, port == 0 {
                // The others join the port the kernel picked.
                address = try SocketAddress.resolve(host: host, port: socket.local.port)[0]
            }
            sockets.append(socket)
        }
        try sockets[0].steerByConnectionID(shards: n)
        var servers: [QUICServer] = []
        for (index, (loop, socket)) in zip(loops, sockets).enumerated() {
            let server = QUICServer(
                loop: loop, identity: identity, settings: shared, socket: socket,
                shard: QUICShard(index: index, count: n), tokenSecret: secret
            ) { accept(index, $0) }
            socket.receiver = server
            loop.execute { server.startOnLoop() }
            servers.append(server)
        }
        return servers
    }

    private func startOnLoop() {
        do throws(QUICError) {
            try socket.start()
            loop.add(self)
        } catch {
            closeNow()
        }
    }

    /// Stops accepting, closes every connection of this server (application close 0) and the socket.
    /// Callable from any thread; idempotent.
    public func close() {
        if loop.isCurrentThread {
            closeNow()
        } else {
            loop.execute { [self] in closeNow() }
        }
    }

    func closeNow() {
        loop.assertOnLoop()
        guard !closed else { return }
        closed = true
        for c in Array(live.values) {
            c.close(code: 0, reason: "server closed")
            c.flush()
            c.terminate(nil)
        }
        routes.removeAll()
        live.removeAll()
        socket.close()
        loop.remove(self)
    }

    // MARK: - Routing (loop thread)

    func associate(_ key: CIDKey, with connection: QUICConnection) {
        routes[key] = connection
        connection.cidKeys.insert(key)
    }

    func dissociate(_ key: CIDKey) {
        if let c = routes.removeValue(forKey: key) { c.cidKeys.remove(key) }
    }

    func forget(_ connection: QUICConnection) {
        for key in connection.cidKeys where routes[key] === connection { routes.removeValue(forKey: key) }
        connection.cidKeys.removeAll()
        live.removeValue(forKey: ObjectIdentifier(connection))
    }

    func socketError(_ code: Int32) {
        // Unconnected UDP sockets report no ICMP errors; nothing to attribute this to.
    }

    func receive(_ packet: UnsafeRawBufferPointer, from: SocketAddress) {
        loop.assertOnLoop()
        // Never a valid QUIC packet (ngtcp2 examples use the same bound).
        guard packet.count >= 21, !closed, let base = packet.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return
        }
        var vc = ngtcp2_version_cid()
        let rc = ngtcp2_pkt_decode_version_cid(&vc, base, packet.count, Self.cidLength)
        if rc == NGTCP2_ERR_VERSION_NEGOTIATION {
            // RFC 9000 §6.1: only for datagrams that could carry an Initial; a small spoofed
            // packet must not make us send anything back (amplification). ngtcp2 1.11 already
            // refuses to decode such a packet; this keeps the rule if a version does not.
            guard packet.count >= Self.minInitialDatagram else { return }
            sendVersionNegotiation(vc, to: from)
            return
        }
        guard rc == 0 else { return }
        let key = CIDKey(UnsafeRawBufferPointer(start: vc.dcid, count: vc.dcidlen))
        if let connection = routes[key] {
            connection.receive(packet, from: from)
            return
        }
        var hd = ngtcp2_pkt_hd()
        guard ngtcp2_accept(&hd, base, packet.count) == 0 else { return }
        let source = from.hostKey
        var handshaking = 0
        var fromSource = 0
        for c in live.values where c.isHandshaking {
            handshaking += 1
            if c.sourceKey == source { fromSource += 1 }
        }
        guard live.count < settings.maxConnections, fromSource < settings.maxHandshakesPerAddress else {
            counters.withLock { $0.handshakesRefused += 1 }
            return
        }
        var original: ngtcp2_cid?
        if hd.tokenlen > 0, let token = hd.token, token[0] == UInt8(NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY2) {
            var odcid = ngtcp2_cid()
            let verified = tokenSecret.withUnsafeBufferPointer { secret in
                ngtcp2_crypto_verify_retry_token2(
                    &odcid, token, hd.tokenlen, secret.baseAddress, secret.count, hd.version, from.sockaddr,
                    from.length, &hd.dcid, Self.retryTokenLifetime, Sys.now())
            }
            switch verified {
            case 0:
                original = odcid
            case NGTCP2_CRYPTO_ERR_VERIFY_TOKEN:
                // A token we made, for another address or expired: refuse, statelessly.
                counters.withLock { $0.invalidTokens += 1 }
                sendInvalidToken(hd, to: from)
                return
            default:
                break  // not readable as ours: as if there were none
            }
        }
        if original == nil && handshaking >= settings.retryThreshold {
            sendRetry(hd, to: from)
            return
        }
        newConnection(hd, packet, from: from, original: original)
    }

    /// A Retry packet carrying a token that binds the client's address and its original DCID.
    private func sendRetry(_ hd: ngtcp2_pkt_hd, to: SocketAddress) {
        var header = hd
        var scid = ngtcp2_cid()
        QUICConnection.randomCID(&scid, length: Self.cidLength)
        var token = [UInt8](repeating: 0, count: 256)
        let tokenLength = tokenSecret.withUnsafeBufferPointer { secret in
            ngtcp2_crypto_generate_retry_token2(
                &token, secret.baseAddress, secret.count, header.version, to.sockaddr, to.length, &scid, &header.dcid,
                Sys.now())
        }
        guard tokenLength > 0 else { return }
        var buf = [UInt8](repeating: 0, count: 1280)
        let n = ngtcp2_crypto_write_retry(
            &buf, buf.count, header.version, &header.scid, &scid, &header.dcid, token, Int(tokenLength))
        guard n > 0 else { return }
        counters.withLock { $0.retriesSent += 1 }
        _ = buf.withUnsafeBytes {
            socket.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: UnsafePointer(to.sockaddr), length: to.length)
        }
    }

    /// A stateless CONNECTION_CLOSE with INVALID_TOKEN, as ngtcp2's example server answers a bad token.
    private func sendInvalidToken(_ hd: ngtcp2_pkt_hd, to: SocketAddress) {
        var header = hd
        var buf = [UInt8](repeating: 0, count: 1280)
        let n = ngtcp2_crypto_write_connection_close(
            &buf, buf.count, header.version, &header.scid, &header.dcid, UInt64(NGTCP2_INVALID_TOKEN), nil, 0)
        guard n > 0 else { return }
        _ = buf.withUnsafeBytes {
            socket.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: UnsafePointer(to.sockaddr), length: to.length)
        }
    }

    private func newConnection(
        _ header: ngtcp2_pkt_hd, _ packet: UnsafeRawBufferPointer, from: SocketAddress, original: ngtcp2_cid?
    ) {
        var hd = header
        let c = QUICConnection(loop: loop, isClient: false, settings: settings, delegate: nil)
        c.server = self
        c.socket = socket
        c.remote.assign(from)
        c.sourceKey = from.hostKey
        do throws(QUICError) {
            c.tls = try TLSSession(server: identity, alpn: settings.alpn, connRef: c.connRef)
        } catch {
            return
        }
        c.shard = shard
        var scid = ngtcp2_cid()
        QUICConnection.randomCID(&scid, length: Self.cidLength)
        withUnsafeMutableBytes(of: &scid.data) { $0[0] = shard.firstByte($0[0]) }
        var params = c.makeTransportParams()
        if let original {
            // The client came back with our Retry token: its first DCID is the original, the
            // one it uses now is the Retry's SCID (RFC 9000 §7.3).
            params.original_dcid = original
            params.retry_scid = hd.dcid
            params.retry_scid_present = 1
        } else {
            params.original_dcid = hd.dcid
        }
        params.original_dcid_present = 1  // mandatory for servers: Debian's ngtcp2 asserts on it
        var cs = c.makeSettings()
        if original != nil {
            cs.token = hd.token
            cs.tokenlen = hd.tokenlen
            cs.token_type = NGTCP2_TOKEN_TYPE_RETRY
        }
        var callbacks = c.makeCallbacks()
        var path = ngtcp2_path(
            local: ngtcp2_addr(addr: socket.local.sockaddr, addrlen: socket.local.length),
            remote: ngtcp2_addr(addr: c.remote.sockaddr, addrlen: c.remote.length), user_data: nil)
        var conn: OpaquePointer?
        let rc = moq_ngtcp2_conn_server_new(
            &conn, &hd.scid, &scid, &path, hd.version, &callbacks, &cs, &params, Unmanaged.passUnretained(c).toOpaque())
        guard rc == 0, let conn else { return }
        c.conn = conn
        live[ObjectIdentifier(c)] = c
        associate(CIDKey(hd.dcid), with: c)
        associate(CIDKey(scid), with: c)
        c.activate()
        let delegate = accept(c)
        c.delegate = delegate
        c.receive(packet, from: from)
        if delegate == nil { c.refuse() }
    }

    private func sendVersionNegotiation(_ vc: ngtcp2_version_cid, to: SocketAddress) {
        var buf = [UInt8](repeating: 0, count: 256)
        var versions: [UInt32] = [UInt32(NGTCP2_PROTO_VER_V1)]
        var unused: UInt8 = 0
        withUnsafeMutableBytes(of: &unused) { Sys.random($0) }
        let n = ngtcp2_pkt_write_version_negotiation(
            &buf, buf.count, unused, vc.scid, vc.scidlen, vc.dcid, vc.dcidlen, &versions, versions.count)
        if n > 0 {
            counters.withLock { $0.versionNegotiations += 1 }
            _ = buf.withUnsafeBytes {
                socket.send(
                    UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: UnsafePointer(to.sockaddr), length: to.length)
            }
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqModel
import MoqQMux
import MoqQUIC
import MoqSession
import MoqSync

#if canImport(Glibc)
    import Glibc
#endif

extension MoqServer {
    /// Takes over a TCP socket whose WebSocket upgrade was accepted: answers it with `response`
    /// (the 101), then runs a moq-lite session over qmux on it, scoped to `target` (the request's
    /// path and query, as a WebTransport CONNECT's), over the connection's TLS session if it has one.
    /// Returns false (the caller answers 503 and closes) past ``Options/maxConnections``.
    func acceptWebSocket(_ handOff: RelayWeb.HandOff, target: String, response: [UInt8], peer: String) -> Bool {
        let limit = options.maxConnections
        let count = loops.count
        let index = webSocketCount.withLock { c -> Int? in
            guard c.open < limit else { return nil }
            c.open += 1
            c.next += 1
            return c.next % count
        }
        guard let index else { return false }
        let loop = loops[index]
        let box = WeakReference(self)
        let origin = self.origin
        let options = self.options
        loop.execute {
            var config = SessionConfig(role: options.role, limits: options.limits)
            if let hop = options.hopID { config.hopID = hop }
            let endpoint = SessionConnection(loop: loop, config: config, directory: origin, peerDescription: peer)
            endpoint.webTransportPath = target
            let stream: any ByteStream
            do {
                let tcp = try TCPStream(adopting: handOff.fd, loop: loop, remoteAddress: peer)
                if !handOff.unsent.isEmpty { tcp.write(handOff.unsent) }
                stream = handOff.tls.map { TLSStream(tcp: tcp, tls: $0) } ?? tcp
            } catch {
                box.value?.webSocketCount.withLock { $0.open -= 1 }
                return
            }
            stream.write(response)
            var settings = QMuxSettings()
            settings.idleTimeoutMs = options.idleTimeout.nanoseconds / 1_000_000
            let link = QMuxLink(endpoint: endpoint, tcp: stream, isClient: false, settings: settings)
            endpoint.qmuxLink = link
            link.onClosed = { box.value?.webSocketCount.withLock { $0.open -= 1 } }
            endpoint.startConnectTimer(.seconds(15))
            endpoint.onReady = { result in
                guard case .success = result, let server = box.value, let core = endpoint.core else { return }
                let session = MoqSession(
                    loop: loop, connection: endpoint, origin: origin, url: nil, binding: .webSocket)
                session.installHandlers()
                server.track(session)
                var setup = core.peerSetup ?? Setup()
                setup.path = target
                server.onSession(session, setup)
            }
            link.start(leftover: handOff.leftover)
        }
        return true
    }
}

extension MoqServer {
    /// A connected socket's peer as `address:port` (numeric).
    static func peerAddress(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getpeername(fd, $0, &length) == 0
                    && getnameinfo(
                        $0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0
            }
        }
        guard ok else { return "unknown peer" }
        let address = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let port = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    /// Whether an address from ``peerAddress(_:)`` is a loopback one.
    static func isLoopback(_ peer: String) -> Bool {
        peer.hasPrefix("127.") || peer.hasPrefix("[::1]") || peer.hasPrefix("[::ffff:127.")
    }
}

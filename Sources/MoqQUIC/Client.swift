// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc

/// Starts client connections.
public enum QUICClient {
    /// Starts a handshake with `host`:`port`; the outcome arrives on the delegate (`quicConnectionDidConnect`
    /// or `didCloseWith`). Callable from any thread; nothing is delivered before this function returns.
    ///
    /// Host names are resolved with `getaddrinfo` on a helper thread (IP literals are used directly); the first
    /// address is used. The UDP socket is `connect()`ed, and its real local address (`getsockname`) goes into
    /// ngtcp2's path. SNI is the host name (or ``TLSClientConfiguration/serverName``), omitted for IP literals.
    public static func connect(
        host: String, port: UInt16, tls: TLSClientConfiguration, settings: QUICSettings,
        loop: QUICEventLoop, delegate: any QUICConnectionDelegate
    ) -> QUICConnection {
        let connection = QUICConnection(loop: loop, isClient: true, settings: settings, delegate: delegate)
        connection.tlsClient = (tls, host)
        let resolveAndStart: @Sendable () -> Void = {
            let result: Result<[SocketAddress], QUICError>
            do throws(QUICError) {
                result = .success(try SocketAddress.resolve(host: host, port: port))
            } catch {
                result = .failure(error)
            }
            loop.execute { connection.startClient(result) }
        }
        if SocketAddress.isIPLiteral(host) {
            resolveAndStart()  // numeric: getaddrinfo does not block
        } else {
            spawnDetached(resolveAndStart)
        }
        return connection
    }
}

extension QUICConnection {
    /// Loop thread: creates the socket, TLS session and ngtcp2 client connection, then starts the handshake.
    func startClient(_ resolved: Result<[SocketAddress], QUICError>) {
        loop.assertOnLoop()
        guard phase == .starting else { return }
        if loop.isStopping {
            terminate(.unreachable("the event loop is shutting down"))
            return
        }
        let addresses: [SocketAddress]
        switch resolved {
        case .success(let a): addresses = a
        case .failure(let e):
            terminate(.unreachable(e.description))
            return
        }
        let target = addresses[0]
        remote.assign(target)
        do throws(QUICError) {
            let socket = try UDPSocket(loop: loop, bind: nil, connect: target)
            self.socket = socket
            socket.receiver = self
            try socket.start()
        } catch {
            terminate(.unreachable(error.description))
            return
        }
        guard let (config, host) = tlsClient else { return }
        do throws(QUICError) {
            tls = try TLSSession(client: config, host: host, alpn: settings.alpn, connRef: connRef)
        } catch {
            terminate(.tls("cannot set up TLS: \(error)"))
            return
        }
        var dcid = ngtcp2_cid()
        var scid = ngtcp2_cid()
        Self.randomCID(&dcid, length: 18)
        Self.randomCID(&scid, length: 18)
        var cs = makeSettings()
        var params = makeTransportParams()
        var callbacks = makeCallbacks()
        let local = socket!.local
        var path = ngtcp2_path(
            local: ngtcp2_addr(addr: local.sockaddr, addrlen: local.length),
            remote: ngtcp2_addr(addr: remote.sockaddr, addrlen: remote.length), user_data: nil)
        var c: OpaquePointer?
        let rc = moq_ngtcp2_conn_client_new(
            &c, &dcid, &scid, &path, UInt32(NGTCP2_PROTO_VER_V1), &callbacks, &cs, &params,
            Unmanaged.passUnretained(self).toOpaque())
        if rc != 0 {
            terminate(
                .transport(code: 0, reason: Sys.ngtcp2Error("ngtcp2_conn_client_new", rc).description, byPeer: false))
            return
        }
        conn = c
        activate()
    }

    static func randomCID(_ cid: inout ngtcp2_cid, length: Int) {
        cid.datalen = length
        withUnsafeMutableBytes(of: &cid.data) { Sys.random(UnsafeMutableRawBufferPointer(rebasing: $0[0..<length])) }
    }
}

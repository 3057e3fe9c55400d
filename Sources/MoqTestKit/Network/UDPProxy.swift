// SPDX-License-Identifier: MIT
import Glibc
import MoqSync
import Synchronization

/// A UDP proxy on 127.0.0.1 between QUIC clients and a server, for network-fault tests: it forwards
/// datagrams both ways on a thread of its own and, on command, impairs each direction (see
/// ``Impairment``: blackholes, random and bursty loss, handshake-only loss, delay and jitter with or
/// without reordering, duplication, a rate limit with a bounded queue). Each client address gets its
/// own upstream socket, so the server sees one peer per client, as through a NAT; ``rebind()``
/// changes those source ports mid-stream, as a NAT that forgets a mapping does.
///
/// ```swift
/// let proxy = try UDPProxy.start(forwardingTo: relay.port)
/// // publish to relay.url(via: proxy) …
/// proxy.blackhole()        // silent outage: senders see no error, nothing arrives
/// proxy.restore()          // the link is back
/// proxy.rebind()           // the server now sees the client from another port (QUIC migrates)
/// proxy.statistics         // forwarded / dropped counts, for assertions that cannot pass vacuously
/// ```
public final class UDPProxy: Sendable {
    /// The port clients send to.
    public let port: UInt16
    /// The server's port on 127.0.0.1.
    public let targetPort: UInt16
    private let control: ProxyControl
    private let thread = Lock<pthread_t?>(nil)

    private init(port: UInt16, targetPort: UInt16, control: ProxyControl) {
        self.port = port
        self.targetPort = targetPort
        self.control = control
    }

    /// Starts forwarding from a free port to 127.0.0.1:`targetPort`.
    ///
    /// - Parameters:
    ///   - seed: seeds the loss decisions (the same traffic gets the same drops).
    ///   - flowIdleTimeout: a client flow idle this long is forgotten and its upstream socket
    ///     closed (a NAT's mapping timeout): long soaks with many reconnects hold no sockets for
    ///     clients that left.
    public static func start(
        forwardingTo targetPort: UInt16, seed: UInt64 = 0x5EED, flowIdleTimeout: Duration = .seconds(30)
    ) throws(TestKitError) -> UDPProxy {
        let listener = try UDPSocket()
        let control = try ProxyControl()
        let proxy = UDPProxy(port: listener.localPort, targetPort: targetPort, control: control)
        let loop = ProxyLoop(
            listener: listener, targetPort: targetPort, control: control, seed: seed, flowIdleTimeout: flowIdleTimeout)
        let box = Unmanaged.passRetained(loop).toOpaque()
        var tid = pthread_t()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                Unmanaged<ProxyLoop>.fromOpaque(arg!).takeRetainedValue().run()
                return nil
            }, box)
        guard rc == 0 else {
            Unmanaged<ProxyLoop>.fromOpaque(box).release()
            throw .proxy("pthread_create: \(rc)")
        }
        proxy.thread.withLock { $0 = tid }
        return proxy
    }

    /// The impairment in force.
    public var impairment: Impairment { control.shared.withLock { $0.impairment } }

    /// Applies `impairment` to every datagram from now on.
    public func impair(_ impairment: Impairment) {
        control.shared.withLock { $0.impairment = impairment }
        control.wake()
    }

    /// Drops every datagram, both ways, until ``restore()``.
    public func blackhole() { impair(.blackhole) }

    /// Forwards everything again, without loss or delay.
    public func restore() { impair(.none) }

    /// Gives every client flow a new source port toward the server from now on (NAT rebinding);
    /// datagrams the server sends to the old port are lost. QUIC peers must validate the new path
    /// and keep the connection.
    public func rebind() {
        control.shared.withLock { $0.rebindsRequested += 1 }
        control.wake()
    }

    /// Counts so far.
    public var statistics: ProxyStatistics { control.shared.withLock { $0.statistics } }

    /// Stops forwarding and closes every socket. Idempotent.
    public func stop() {
        guard
            let tid = thread.withLock({ t -> pthread_t? in
                defer { t = nil }
                return t
            })
        else { return }
        control.stopping.store(true, ordering: .releasing)
        control.wake()
        pthread_join(tid, nil)
    }

    deinit { stop() }
}

/// What the proxy's owner and its thread share.
final class ProxyControl: Sendable {
    struct Shared: Sendable {
        var impairment = Impairment.none
        var statistics = ProxyStatistics()
        var rebindsRequested = 0
    }

    let shared = Lock(Shared())
    let stopping = Atomic(false)
    /// A pipe whose read end interrupts the thread's poll.
    let wakeFD: Int32
    private let wakeWriteFD: Int32

    init() throws(TestKitError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw .proxy("pipe: \(UDPSocket.errorText())") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }

    /// Interrupts the thread's poll (a full pipe already will).
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWriteFD, &byte, 1)
    }
}

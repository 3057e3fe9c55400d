// SPDX-License-Identifier: MIT
import Glibc
import MoqBase

/// The proxy's thread: sockets, client flows, the delay line and the generator live here and nowhere else
/// (which is why this class is not `Sendable`: it is handed to its thread once and only used there).
final class ProxyLoop {
    private struct Flow {
        let client: sockaddr_in
        var upstream: UDPSocket
        /// When a datagram last went through, either way (monotonic ns).
        var lastActive: UInt64
    }

    private struct Delayed {
        let due: UInt64
        let bytes: [UInt8]
        let toServer: Bool
        let flow: UInt64
    }

    private let listener: UDPSocket
    private let targetPort: UInt16
    private let control: ProxyControl
    private let flowIdleTimeoutNs: UInt64
    private var nextExpiryCheck: UInt64 = 0
    private var generator: SeededGenerator
    private var flows: [UInt64: Flow] = [:]
    /// Sorted by `due`; equal times keep arrival order.
    private var delayed: [Delayed] = []
    private var toServer = LinkState()
    private var toClient = LinkState()
    private var rebindsDone = 0
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    init(listener: UDPSocket, targetPort: UInt16, control: ProxyControl, seed: UInt64, flowIdleTimeout: Duration) {
        self.listener = listener
        self.targetPort = targetPort
        self.control = control
        flowIdleTimeoutNs = LinkState.nanoseconds(flowIdleTimeout)
        generator = SeededGenerator(seed: seed)
    }

    func run() {
        while !control.stopping.load(ordering: .acquiring) {
            let keys = Array(flows.keys)
            var fds = [pollfd(fd: control.wakeFD, events: Int16(POLLIN), revents: 0)]
            fds.append(pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0))
            for key in keys {
                fds.append(pollfd(fd: flows[key]?.upstream.fd ?? -1, events: Int16(POLLIN), revents: 0))
            }
            // At least once a second, to forget idle flows.
            let timeout =
                delayed.first.map {
                    min(1000, Int32(clamping: ($0.due &- min($0.due, Self.now()) + 999_999) / 1_000_000))
                }
                ?? 1000
            if poll(&fds, nfds_t(fds.count), timeout) < 0, errno != EINTR { return }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(control.wakeFD, &drain, drain.count) > 0 {}
            }
            let (impairment, rebinds) = control.shared.withLock { ($0.impairment, $0.rebindsRequested) }
            if rebinds != rebindsDone { rebind(to: rebinds) }
            if fds[1].revents != 0 { readClients(impairment) }
            for (i, key) in keys.enumerated() where fds[i + 2].revents != 0 { readServer(key, impairment) }
            flushDelayed()
            expireIdleFlows()
        }
    }

    /// Forgets flows idle for longer than the timeout, closing their upstream sockets, as a NAT
    /// forgets a mapping: a client that comes back later gets a new source port.
    private func expireIdleFlows() {
        let now = Self.now()
        guard now >= nextExpiryCheck else { return }
        nextExpiryCheck = now + 1_000_000_000
        let idle = flows.filter { now &- $0.value.lastActive > flowIdleTimeoutNs }.map(\.key)
        guard !idle.isEmpty else { return }
        for key in idle { flows[key] = nil }
        control.shared.withLock { $0.statistics.flowsExpired += idle.count }
    }

    private func readClients(_ impairment: Impairment) {
        while let (count, from) = listener.receive(into: &buffer) {
            let key = UInt64(from.sin_addr.s_addr) << 16 | UInt64(from.sin_port)
            if flows[key] == nil {
                guard let upstream = try? UDPSocket(connectingTo: targetPort) else { continue }
                flows[key] = Flow(client: from, upstream: upstream, lastActive: Self.now())
                control.shared.withLock { $0.statistics.clients += 1 }
            }
            flows[key]?.lastActive = Self.now()
            route(Array(buffer[0..<count]), toServer: true, flow: key, impairment.toServer)
        }
    }

    private func readServer(_ key: UInt64, _ impairment: Impairment) {
        guard let flow = flows[key] else { return }
        while let (count, _) = flow.upstream.receive(into: &buffer) {
            flows[key]?.lastActive = Self.now()
            route(Array(buffer[0..<count]), toServer: false, flow: key, impairment.toClient)
        }
    }

    /// A NAT rebinding: every flow gets a new source port toward the server; whatever the server
    /// still sends to the old port is lost, as behind a real NAT.
    private func rebind(to requested: Int) {
        for key in Array(flows.keys) {
            guard let fresh = try? UDPSocket(connectingTo: targetPort) else { continue }
            flows[key]?.upstream = fresh
        }
        control.shared.withLock { $0.statistics.rebinds += requested - rebindsDone }
        rebindsDone = requested
    }

    private func route(_ bytes: [UInt8], toServer: Bool, flow: UInt64, _ link: LinkImpairment) {
        let now = Self.now()
        let decision =
            toServer
            ? self.toServer.decide(bytes, link, now: now, generator: &generator)
            : self.toClient.decide(bytes, link, now: now, generator: &generator)
        control.shared.withLock { s in
            switch decision {
            case .drop(let queueFull):
                if toServer { s.statistics.droppedToServer += 1 } else { s.statistics.droppedToClient += 1 }
                if queueFull { s.statistics.queueDrops += 1 }
            case .deliver(_, let copies, let reordered, let overtakes):
                s.statistics.duplicated += copies - 1
                if reordered { s.statistics.reordered += 1 }
                if overtakes { s.statistics.overtaken += 1 }
            }
        }
        guard case .deliver(let due, let copies, _, _) = decision else { return }
        for _ in 0..<copies {
            if due <= now && delayed.isEmpty {
                send(bytes, toServer: toServer, flow: flow)
            } else {
                insert(Delayed(due: due, bytes: bytes, toServer: toServer, flow: flow))
            }
        }
    }

    private func insert(_ item: Delayed) {
        var low = delayed.startIndex
        var high = delayed.endIndex
        while low < high {
            let mid = (low + high) / 2
            if delayed[mid].due <= item.due { low = mid + 1 } else { high = mid }
        }
        delayed.insert(item, at: low)
    }

    private func send(_ bytes: [UInt8], toServer: Bool, flow key: UInt64) {
        guard let flow = flows[key] else { return }
        if toServer { flow.upstream.send(bytes) } else { listener.send(bytes, to: flow.client) }
        control.shared.withLock {
            if toServer { $0.statistics.forwardedToServer += 1 } else { $0.statistics.forwardedToClient += 1 }
        }
    }

    /// Sends what is due, in due order.
    private func flushDelayed() {
        let now = Self.now()
        var sent = 0
        for d in delayed {
            guard d.due <= now else { break }
            send(d.bytes, toServer: d.toServer, flow: d.flow)
            sent += 1
        }
        delayed.removeFirst(sent)
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

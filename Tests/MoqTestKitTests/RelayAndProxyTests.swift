// SPDX-License-Identifier: MIT
import Foundation
import MoqPipeline
import MoqTestKit
import SwiftMoQ
import Testing

@Suite("Test relay and UDP proxy", .serialized, .timeLimit(.minutes(1)))
struct RelayAndProxyTests {
    @Test("the relay listens on a free port with a pinned certificate, and renders moqsink properties")
    func relayBasics() async throws {
        try await withTestRelay() { (relay) async throws in
            #expect(relay.port != 0)
            #expect(relay.fingerprint.count == 64 && relay.fingerprint.allSatisfy(\.isHexDigit))
            #expect(relay.url() == "moql://127.0.0.1:\(relay.port)/anon")
            #expect(
                relay.moqsinkProperties(broadcast: "room/cam")
                    == "url=moql://127.0.0.1:\(relay.port)/anon broadcast=room/cam tls-fingerprint=\(relay.fingerprint)"
            )
            #expect(
                Element.moqsink(relay: relay, broadcast: "room/cam").description
                    == "moqsink name=moq \(relay.moqsinkProperties(broadcast: "room/cam"))")
            let session = try await relay.connect()
            session.close()
        }
    }

    @Test("stop() closes the port; restart() comes back on it with the same certificate")
    func restart() async throws {
        try await withTestRelay() { (relay) async throws in
            let port = relay.port
            let pin = relay.fingerprint
            await relay.stop()
            #expect(!relay.isRunning)
            var options = relay.clientOptions
            options.connectTimeout = .milliseconds(500)
            await #expect(throws: MoqError.self) {
                _ = try await MoqSession.connect(relay.url(), options: options)
            }
            try await relay.restart()
            #expect(relay.port == port && relay.fingerprint == pin)
            let session = try await relay.connect()  // pinned to the old fingerprint: same certificate
            session.close()
        }
    }

    @Test("the proxy forwards both ways, drops everything while blackholed, and forwards again after restore")
    func proxyForwardsAndBlackholes() async throws {
        let echo = try UDPEcho()
        let proxy = try UDPProxy.start(forwardingTo: echo.port)
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try UDPClient(port: proxy.port)
        for i in 0..<10 { client.send([UInt8(i)]) }
        let replies = try await client.receive(count: 10)
        #expect(replies == (0..<10).map { [UInt8($0)] })
        #expect(proxy.statistics.forwardedToServer == 10 && proxy.statistics.forwardedToClient == 10)
        #expect(proxy.statistics.clients == 1)

        proxy.blackhole()
        for i in 0..<5 { client.send([UInt8(100 + i)]) }
        try await eventually("5 drops") { proxy.statistics.droppedToServer == 5 }
        #expect(client.pending().isEmpty)
        #expect(echo.received == 10)

        proxy.restore()
        client.send([42])
        #expect(try await client.receive(count: 1) == [[42]])
    }

    @Test("seeded loss drops a share deterministically; delay keeps order")
    func lossAndDelay() async throws {
        let echo = try UDPEcho()
        let proxy = try UDPProxy.start(forwardingTo: echo.port, seed: 7)
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try UDPClient(port: proxy.port)
        proxy.impair(Impairment(lossToServer: 0.5))
        for i in 0..<200 { client.send([UInt8(i % 256)]) }
        try await eventually("200 decisions") {
            let s = proxy.statistics
            return s.forwardedToServer + s.droppedToServer == 200
        }
        let s = proxy.statistics
        #expect(s.droppedToServer > 50 && s.forwardedToServer > 50, "\(s)")
        _ = try await client.receive(count: s.forwardedToServer)

        proxy.impair(.delay(.milliseconds(30)))
        for i in 0..<20 { client.send([UInt8(i)]) }
        #expect(try await client.receive(count: 20) == (0..<20).map { [UInt8($0)] })
    }
}

/// A UDP echo server on its own thread.
final class UDPEcho: @unchecked Sendable {  // fd is immutable; the counter is only touched under the lock
    let fd: Int32
    let port: UInt16
    private let lock = NSLock()
    private var count = 0
    private var sourcePorts: Set<UInt16> = []
    private var thread: Thread?

    init() throws {
        let sock = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &length) }
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        fd = sock
        port = UInt16(bigEndian: address.sin_port)
        let t = Thread { [self] in run() }
        thread = t
        t.start()
    }

    private var stopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return thread == nil
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !stopped {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, &buffer, buffer.count, 0, $0, &length)
                }
            }
            guard n > 0 else { continue }
            lock.lock()
            count += 1
            sourcePorts.insert(UInt16(bigEndian: from.sin_port))
            lock.unlock()
            _ = withUnsafePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, buffer, n, 0, $0, length) }
            }
        }
    }

    var received: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    /// The source ports datagrams came from (the proxy's upstream sockets).
    var sources: Set<UInt16> {
        lock.lock()
        defer { lock.unlock() }
        return sourcePorts
    }

    func stop() {
        lock.lock()
        thread = nil
        lock.unlock()
        usleep(100_000)
        close(fd)
    }
}

/// A UDP client socket connected to the proxy.
final class UDPClient {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) { _ = Glibc.send(fd, bytes, bytes.count, 0) }

    /// Datagrams waiting now.
    func pending() -> [[UInt8]] {
        var out: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return out }
            out.append(Array(buffer[0..<n]))
        }
    }

    func receive(count: Int, timeout: Duration = .seconds(10)) async throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        try await eventually("\(count) datagrams", timeout: timeout) {
            out += pending()
            return out.count >= count
        }
        return out
    }

    /// Everything that arrives until nothing has for `quiet`.
    func receiveUntilQuiet(_ quiet: Duration = .milliseconds(300)) async throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var lastArrival = ContinuousClock.now
        while ContinuousClock.now - lastArrival < quiet {
            let batch = pending()
            if !batch.isEmpty { lastArrival = .now }
            out += batch
            try await Task.sleep(for: .milliseconds(5))
        }
        return out
    }
}

// SPDX-License-Identifier: MIT
// The server's defences before a connection exists: Retry under handshake load, a bound on
// handshakes per source address, no Version Negotiation for small datagrams.
import Foundation
import Glibc
import MoqTestKit
import MoqWire
import Synchronization
import Testing

@testable import MoqQUIC

/// A plain UDP socket on 127.0.0.1 (a client's Initials are captured and replayed through it).
final class RawUDP: Sendable {
    let fd: Int32
    let port: UInt16

    init(host: String = "127.0.0.1") {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr(host)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8], to port: UInt16) {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The next datagram, or nil after 200 ms (blocking: call off the cooperative pool).
    func receive() -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: 65_536)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buf[0..<n]) : nil
    }
}

/// Runs blocking work on a plain thread, so the cooperative pool is never blocked.
func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { c in Thread { c.resume(returning: body()) }.start() }
}

@Suite(.serialized)
struct HandshakeProtectionTests {
    /// `count` real client Initials (each its own connection attempt), captured on a raw socket.
    func captureInitials(_ count: Int) async throws -> [[UInt8]] {
        let loop = try QUICEventLoop(name: "capture")
        defer { loop.shutdown() }
        var initials: [[UInt8]] = []
        for _ in 0..<count {
            let sink = RawUDP()
            let connection = QUICClient.connect(
                host: "127.0.0.1", port: sink.port, tls: TLSClientConfiguration(verification: .disabled),
                settings: QUICSettings(), loop: loop, delegate: Recorder())
            let first = await offPool { sink.receive() }
            loop.execute { connection.close(code: 0, reason: "") }
            if let first { initials.append(first) }
        }
        return initials
    }

    @Test("past the retry threshold a new client is asked to prove its address; a real client then connects")
    func retryUnderLoad() async throws {
        var settings = QUICSettings()
        settings.retryThreshold = 0  // every new client
        let f = try Fixture(settings: settings)
        defer { f.shutdown() }
        let client = Recorder()
        _ = f.connect(client)
        #expect(await client.wait { $0.connected })
        #expect(await f.serverSide.wait { $0.connected })
        #expect(f.server.stats.retriesSent == 1)
        // A replayed Initial (a spoofing sender) gets a Retry and costs the server no connection.
        let initial = try #require(try await captureInitials(1).first)
        let raw = RawUDP()
        raw.send(initial, to: f.server.localPort)
        let answer = await offPool { raw.receive() }
        #expect(answer.map { $0[0] & 0xf0 } == 0xf0)  // long header, type Retry
        #expect(f.server.stats.retriesSent == 2)
    }

    @Test("handshakes in progress from one address are bounded; other addresses are not affected")
    func handshakesPerAddress() async throws {
        var settings = QUICSettings()
        settings.maxHandshakesPerAddress = 2
        settings.handshakeTimeout = .seconds(30)
        let f = try Fixture(settings: settings)
        defer { f.shutdown() }
        let raw = RawUDP()
        // Five handshakes started from one address, never finished (the raw socket does not answer).
        for initial in try await captureInitials(5) { raw.send(initial, to: f.server.localPort) }
        try await eventually("three refused handshakes", detail: { "\(f.server.stats.handshakesRefused)" }) {
            f.server.stats.handshakesRefused == 3
        }
        // Another source address (127.0.0.2) still starts its handshakes.
        let other = RawUDP(host: "127.0.0.2")
        for initial in try await captureInitials(2) { other.send(initial, to: f.server.localPort) }
        #expect(await offPool { other.receive() } != nil)
        #expect(f.server.stats.handshakesRefused == 3)
    }

    @Test("Version Negotiation only for datagrams that could carry an Initial (≥ 1200 bytes)")
    func versionNegotiationNeedsAFullDatagram() async throws {
        let f = try Fixture()
        defer { f.shutdown() }
        let raw = RawUDP()
        // A long header with an unknown version (0x1a2a3a4a), DCID and SCID of 8 bytes.
        let header: [UInt8] =
            [0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 8] + Array(repeating: 1, count: 8) + [8]
            + Array(repeating: 2, count: 8)
        raw.send(header + Array(repeating: 0, count: 100), to: f.server.localPort)
        #expect(await offPool { raw.receive() } == nil)
        #expect(f.server.stats.versionNegotiations == 0)
        raw.send(header + Array(repeating: 0, count: 1200 - header.count), to: f.server.localPort)
        let answer = await offPool { raw.receive() }
        // Version Negotiation: long header, version 0.
        #expect(answer.map { Array($0[1..<5]) } == [0, 0, 0, 0])
        #expect(f.server.stats.versionNegotiations == 1)
    }

}

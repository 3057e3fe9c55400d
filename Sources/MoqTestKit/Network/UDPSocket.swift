// SPDX-License-Identifier: MIT
import Glibc

/// A non-blocking IPv4 UDP socket on 127.0.0.1 (the proxy's only kind), closed on deinit.
final class UDPSocket {
    let fd: Int32

    /// Binds 127.0.0.1:`port` (0 picks one); connects to 127.0.0.1:`peer` when given.
    init(port: UInt16 = 0, connectingTo peer: UInt16? = nil) throws(TestKitError) {
        fd = socket(
            AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .proxy("socket: \(Self.errorText())") }
        var local = Self.loopback(port)
        if Self.withSockaddr(&local, { bind(fd, $0, $1) }) != 0 {
            let text = Self.errorText()
            close(fd)
            throw .proxy("bind 127.0.0.1:\(port): \(text)")
        }
        if let peer {
            var remote = Self.loopback(peer)
            if Self.withSockaddr(&remote, { connect(fd, $0, $1) }) != 0 {
                let text = Self.errorText()
                close(fd)
                throw .proxy("connect 127.0.0.1:\(peer): \(text)")
            }
        }
    }

    deinit { close(fd) }

    /// The bound port.
    var localPort: UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    /// One datagram and who sent it, or nil when none is waiting.
    func receive(into buffer: inout [UInt8]) -> (count: Int, from: sockaddr_in)? {
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &length)
                }
            }
        }
        return n < 0 ? nil : (n, from)
    }

    /// Sends to the connected peer, or to `destination`. Errors are ignored: UDP may drop anyway.
    func send(_ bytes: [UInt8], to destination: sockaddr_in? = nil) {
        bytes.withUnsafeBytes { raw in
            if var destination {
                _ = Self.withSockaddr(&destination) { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) }
            } else {
                _ = Glibc.send(fd, raw.baseAddress, raw.count, 0)
            }
        }
    }

    static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func withSockaddr<R>(
        _ address: inout sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) -> R {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}

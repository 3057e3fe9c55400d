// SPDX-License-Identifier: MIT
#if canImport(Glibc)
    import Glibc
#endif

/// A blocking TCP socket connected to 127.0.0.1:`port` (raw HTTP and WebSocket tests); the caller closes it.
/// - Throws: `TCPConnectError` when the connect fails.
package func connectTCP(port: UInt16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TCPConnectError(port: port, errno: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rc == 0 else {
        let e = errno
        close(fd)
        throw TCPConnectError(port: port, errno: e)
    }
    return fd
}

/// A TCP connect to 127.0.0.1 that failed.
package struct TCPConnectError: Error, CustomStringConvertible {
    package let port: UInt16
    package let errno: Int32
    package var description: String { "cannot connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))" }
}

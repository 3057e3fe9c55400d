// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSync
import MoqWire

#if canImport(Glibc)
    import Glibc
#endif

/// Fetches `http://host:port/certificate.sha256` over TCP: moq-dev's convention for
/// `http://` URLs, where a development relay with a self-signed certificate publishes its
/// fingerprint, which the client then pins for the WebTransport connection.
///
/// The answer is read with bounds (8 KiB, the timeout) on a thread of its own: the caller's
/// task suspends and never blocks the cooperative pool.
enum CertificateHashFetch {
    /// The most bytes of an answer read.
    static let maxResponseBytes = 8 * 1024

    /// The certificate's SHA-256.
    /// - Throws: ``MoqError/unreachable(_:)`` when nothing answers, ``MoqError/tls(_:)`` when the
    ///   answer is not a fingerprint.
    static func fetch(host: String, port: UInt16, timeout: Duration) async throws(MoqError) -> [UInt8] {
        let outcome = Lock<Result<[UInt8], MoqError>?>(nil)
        let millis = Int(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            spawnDetached {
                let result = fetchBlocking(host: host, port: port, timeoutMs: max(1, millis))
                outcome.withLock { $0 = result }
                continuation.resume()
            }
        }
        guard let result = outcome.withLock({ $0 }) else { throw .unreachable("no answer from \(host):\(port)") }
        return try result.get()
    }

    static func fetchBlocking(host: String, port: UInt16, timeoutMs: Int) -> Result<[UInt8], MoqError> {
        let url = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/certificate.sha256"
        let deadline = SystemClock().now() + UInt64(timeoutMs) * 1_000_000
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else {
            return .failure(.unreachable("cannot resolve \(host) (for \(url))"))
        }
        defer { freeaddrinfo(info) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let addr = candidate {
            candidate = addr.pointee.ai_next
            switch exchange(addr.pointee, host: host, port: port, deadline: deadline) {
            case .success(let response): return parse(response, url: url)
            case .failure(let failure): lastError = failure.text
            }
        }
        return .failure(
            .unreachable(
                "cannot fetch \(url) (\(lastError)); an http:// URL needs the relay's HTTP endpoint on TCP at the same port"
            ))
    }

    private struct Failure: Error { let text: String }

    /// Connects, sends the request and reads the whole answer (the server closes after it).
    private static func exchange(_ addr: addrinfo, host: String, port: UInt16, deadline: UInt64) -> Result<
        [UInt8], Failure
    > {
        let fd = socket(
            addr.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure(text: "socket: \(String(cString: strerror(errno)))")) }
        defer { close(fd) }
        if connect(fd, addr.ai_addr, addr.ai_addrlen) != 0 && errno != EINPROGRESS {
            return .failure(Failure(text: String(cString: strerror(errno))))
        }
        guard wait(fd, for: Int16(POLLOUT), until: deadline) else { return .failure(Failure(text: "timed out")) }
        var soError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
        guard soError == 0 else { return .failure(Failure(text: String(cString: strerror(soError)))) }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let request = Array(
            "GET /certificate.sha256 HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\nAccept: text/plain\r\n\r\n"
                .utf8)
        var sent = 0
        while sent < request.count {
            guard wait(fd, for: Int16(POLLOUT), until: deadline) else { return .failure(Failure(text: "timed out")) }
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return .failure(Failure(text: String(cString: strerror(errno))))
            }
            sent += n
        }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while response.count <= maxResponseBytes {
            guard wait(fd, for: Int16(POLLIN), until: deadline) else { return .failure(Failure(text: "timed out")) }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return .success(response) }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return .failure(Failure(text: String(cString: strerror(errno))))
            }
            response += chunk[..<n]
        }
        return .failure(Failure(text: "the answer is longer than \(maxResponseBytes) bytes"))
    }

    private static func wait(_ fd: Int32, for events: Int16, until deadline: UInt64) -> Bool {
        while true {
            let now = SystemClock().now()
            guard now < deadline else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&entry, 1, Int32(clamping: (deadline - now) / 1_000_000 + 1))
            if rc > 0 { return true }
            if rc < 0 && errno != EINTR { return false }
        }
    }

    /// Reads the status and the fingerprint (64 hex digits, `:` allowed, surrounding space ignored).
    static func parse(_ response: [UInt8], url: String) -> Result<[UInt8], MoqError> {
        guard let split = HTTPRequestHead.headEnd(response) else {
            return .failure(.unreachable("\(url) did not answer HTTP"))
        }
        let head = String(decoding: response[..<split], as: UTF8.self)
        var body = String(decoding: response[split...], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            return .failure(.unreachable("\(url) did not answer HTTP"))
        }
        guard status == 200 else {
            return .failure(
                .tls(
                    "\(url) answered HTTP \(status): the relay publishes no certificate hash; use https:// with tls-fingerprint"
                ))
        }
        if head.lowercased().contains("transfer-encoding: chunked") { body = dechunk(body) }
        let trimmed = body.filter { !$0.isWhitespace }
        guard let hash = Hex.decode(trimmed, allowingColons: true), hash.count == 32 else {
            return .failure(
                .tls("\(url) did not answer with a SHA-256 fingerprint (got \(trimmed.prefix(80).debugDescription))"))
        }
        return .success(hash)
    }

    /// The body of a chunked answer (sizes in hex, each on its own line).
    private static func dechunk(_ body: String) -> String {
        var out = ""
        var lines = body.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        while let sizeLine = lines.popFirst() {
            guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16), size > 0 else { break }
            guard let data = lines.popFirst() else { break }
            out += data.prefix(size)
        }
        return out
    }
}

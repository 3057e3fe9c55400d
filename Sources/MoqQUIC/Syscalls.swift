// SPDX-License-Identifier: MIT
// The one place where libc, ngtcp2 and GnuTLS return codes become Swift errors.
// Every failure names the C function that failed and carries the library's own text.
internal import CNgtcp2
internal import Glibc

/// A failure while setting up QUIC: sockets, name resolution, certificates, or library initialisation.
///
/// Failures of an established connection are reported as ``QUICCloseReason`` instead.
public enum QUICError: Error, Sendable, CustomStringConvertible {
    /// A libc call failed. `function` is the C function, `errno` its error number, `message` `strerror(errno)`.
    case system(function: String, errno: Int32, message: String)
    /// A GnuTLS call failed. `code` is the negative GnuTLS error code, `message` `gnutls_strerror(code)`.
    case tls(function: String, code: Int32, message: String)
    /// An ngtcp2 call failed. `code` is the negative ngtcp2 error code, `message` `ngtcp2_strerror(code)`.
    case ngtcp2(function: String, code: Int32, message: String)
    /// `getaddrinfo` could not resolve `host`.
    case resolve(host: String, message: String)
    /// A certificate or key could not be loaded or generated; `message` says which and why.
    case certificate(String)
    /// An argument was rejected before any C call was made.
    case invalidArgument(String)
    /// The event loop has been shut down.
    case loopShutDown

    /// A one-line, human-readable description naming the failing C function.
    public var description: String {
        switch self {
        case .system(let function, let errno, let message): "\(function) failed: \(message) (errno \(errno))"
        case .tls(let function, let code, let message): "\(function) failed: \(message) (GnuTLS \(code))"
        case .ngtcp2(let function, let code, let message): "\(function) failed: \(message) (ngtcp2 \(code))"
        case .resolve(let host, let message): "cannot resolve \(host): \(message)"
        case .certificate(let message): "certificate: \(message)"
        case .invalidArgument(let message): "invalid argument: \(message)"
        case .loopShutDown: "the QUIC event loop has been shut down"
        }
    }
}

/// Error mapping for the C libraries. Internal: callers get `QUICError` or a `QUICCloseReason`.
enum Sys {
    /// The current `errno` as a `QUICError` for `function`.
    static func errnoError(_ function: String, _ code: Int32 = errno) -> QUICError {
        .system(function: function, errno: code, message: errnoText(code))
    }

    static func errnoText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// A negative GnuTLS return code as a `QUICError`.
    static func tlsError(_ function: String, _ code: Int32) -> QUICError {
        .tls(function: function, code: code, message: tlsText(code))
    }

    static func tlsText(_ code: Int32) -> String {
        String(cString: gnutls_strerror(code))
    }

    /// A negative ngtcp2 return code as a `QUICError`.
    static func ngtcp2Error(_ function: String, _ code: Int32) -> QUICError {
        .ngtcp2(function: function, code: code, message: ngtcp2Text(code))
    }

    static func ngtcp2Text(_ code: Int32) -> String {
        String(cString: ngtcp2_strerror(code))
    }

    /// Checks a GnuTLS return code: negative is failure (GnuTLS convention).
    static func tls(_ function: String, _ code: Int32) throws(QUICError) {
        if code < 0 { throw tlsError(function, code) }
    }

    /// Checks a libc return code: -1 is failure; retries on EINTR.
    @discardableResult
    static func check(_ function: String, _ body: () -> Int32) throws(QUICError) -> Int32 {
        while true {
            let rc = body()
            if rc != -1 { return rc }
            if errno == EINTR { continue }
            throw errnoError(function)
        }
    }

    /// The monotonic clock every ngtcp2 timestamp comes from (CLOCK_MONOTONIC, nanoseconds).
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Cryptographically secure random bytes (GnuTLS' generator).
    static func random(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        let rc = gnutls_rnd(GNUTLS_RND_RANDOM, base, buffer.count)
        precondition(rc == 0, "gnutls_rnd failed: \(tlsText(rc))")
    }

    /// The text of a TLS alert description (`gnutls_alert_get_strname`).
    static func alertName(_ alert: UInt8) -> String {
        guard let name = gnutls_alert_get_strname(gnutls_alert_description_t(UInt32(alert))) else {
            return "alert \(alert)"
        }
        return "\(String(cString: name)) (\(alert))"
    }
}

extension Duration {
    /// The duration in nanoseconds, clamped to `UInt64`.
    var nanoseconds: UInt64 {
        let (s, a) = components
        if s < 0 { return 0 }
        let ns = UInt64(s).multipliedReportingOverflow(by: 1_000_000_000)
        if ns.overflow { return .max }
        return ns.partialValue &+ UInt64(a / 1_000_000_000)
    }
}

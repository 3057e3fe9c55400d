// SPDX-License-Identifier: MIT

/// A relay address, in the schemes moq-dev's clients take:
/// - `moql://host:port/path?query` (`moqt://` is a synonym): raw QUIC, ALPN `moq-lite-06`; the
///   path and query travel in the SETUP Path parameter.
/// - `https://host:port/path?query`: WebTransport over HTTP/3 (ALPN `h3`); the path and query
///   travel in the extended CONNECT's `:path`. The certificate is verified as for raw QUIC.
/// - `http://host:port/path?query`: the same WebTransport session, pinned to the certificate
///   hash the relay serves at `http://host:port/certificate.sha256` over TCP (moq-dev's
///   convention for development relays with self-signed certificates). Where UDP is blocked, the
///   session falls back to WebSocket on the same TCP port (``ClientOptions/webSocketDelay``).
/// - `https://` also races WebSocket over TLS (`wss://`, verified as for QUIC) on the same TCP port
///   where UDP does not answer (``ClientOptions/webSocketDelay``).
/// - `ws://host:port/path?query`: moq-lite over qmux over a WebSocket only (no QUIC; plain TCP,
///   no TLS); the path and query travel in the upgrade request.
/// - `wss://host:port/path?query`: the same over TLS (the certificate verified as for QUIC).
///
/// Either way the path is the root that scopes what the session publishes and sees, and
/// `?jwt=` carries a token.
public struct MoqURL: Sendable, Equatable, CustomStringConvertible {
    /// The scheme as written, lowercased (`moql`, `moqt`, `https`, `http`, `ws` or `wss`).
    public let scheme: String
    /// Host name or IP literal (IPv6 without brackets).
    public let host: String
    /// UDP port.
    public let port: UInt16
    /// The path, starting with `/` (may be just `/`).
    public let path: String
    /// The query without `?`, if any.
    public let query: String?

    /// The default port of a raw QUIC URL that names none (moq-relay's default).
    public static let defaultPort: UInt16 = 4443

    /// True for `https://` and `http://`: the session runs over WebTransport.
    public var isWebTransport: Bool { scheme == "https" || scheme == "http" }

    /// True for `ws://` and `wss://`: the session runs over qmux over a WebSocket.
    public var isWebSocket: Bool { scheme == "ws" || scheme == "wss" }

    /// True for `wss://`: the WebSocket runs over TLS, verified as for QUIC.
    public var isSecureWebSocket: Bool { scheme == "wss" }

    /// The WebSocket URL a fallback dials: the same host, port, path and query (`http` → `ws`,
    /// `https` → `wss`).
    public var webSocketURL: MoqURL {
        MoqURL(scheme: scheme == "https" ? "wss" : "ws", host: host, port: port, path: path, query: query)
    }

    /// True for `http://`: the certificate hash is fetched from the relay and pinned.
    public var fetchesCertificateHash: Bool { scheme == "http" }

    /// The URL where an `http://` relay publishes its certificate's SHA-256.
    public var certificateHashURL: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "http://\(h):\(port)/certificate.sha256"
    }

    /// Parses a URL; the error says what to fix.
    public init(_ string: String) throws(MoqError) {
        guard let schemeEnd = string.firstRange(of: "://") else {
            throw .invalidURL("'\(string)' is not a URL: expected moql://host:port/path")
        }
        let scheme = String(string[..<schemeEnd.lowerBound]).lowercased()
        var port: UInt16
        switch scheme {
        case "moql", "moqt": port = MoqURL.defaultPort
        case "https": port = 443
        case "http", "ws": port = 80
        case "wss": port = 443
        default:
            throw .invalidURL(
                "'\(string)': unsupported scheme '\(scheme)'; use moql://host:port/path (raw QUIC) or https://host:port/path (WebTransport)"
            )
        }
        var rest = String(string[schemeEnd.upperBound...])
        var query: String?
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = String(rest[..<q])
        }
        if let hash = rest.firstIndex(of: "#") { rest = String(rest[..<hash]) }
        let authority: String
        let path: String
        if let slash = rest.firstIndex(of: "/") {
            authority = String(rest[..<slash])
            path = String(rest[slash...])
        } else {
            authority = rest
            path = "/"
        }
        guard !authority.contains("@") else {
            throw .invalidURL("'\(string)': credentials in the URL are not supported; use ?jwt=<token>")
        }
        var host: String
        var portText: String?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw .invalidURL("'\(string)': unterminated IPv6 literal")
            }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = String(after.dropFirst())
            } else if !after.isEmpty {
                throw .invalidURL("'\(string)': unexpected text after the IPv6 literal")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            portText = String(authority[authority.index(after: colon)...])
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw .invalidURL("'\(string)': the host is missing") }
        if let portText {
            guard let p = UInt16(portText), p != 0 else {
                throw .invalidURL("'\(string)': '\(portText)' is not a valid port (1-65535)")
            }
            port = p
        }
        host = host.lowercased()
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
    }

    /// The path, then `?query` if any: the SETUP Path parameter on raw QUIC, the CONNECT's
    /// `:path` on WebTransport.
    public var setupPath: String { query.map { "\(path)?\($0)" } ?? path }

    /// The `:authority` of a WebTransport CONNECT.
    public var authority: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(h):\(port)"
    }

    /// This URL with `jwt=<token>` added to the query.
    public func addingToken(_ token: String) -> MoqURL {
        var copy = self
        let pair = "jwt=\(token)"
        copy = MoqURL(scheme: scheme, host: host, port: port, path: path, query: query.map { "\($0)&\(pair)" } ?? pair)
        return copy
    }

    private init(scheme: String, host: String, port: UInt16, path: String, query: String?) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(h):\(port)\(setupPath)"
    }

    /// The URL without its query (tokens are never logged).
    public var redacted: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(h):\(port)\(path)"
    }
}

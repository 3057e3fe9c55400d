// SPDX-License-Identifier: MIT
import FoundationEssentials
internal import MoqQUIC
public import MoqWire

/// How the relay's certificate is checked. Verified against the system CAs and the
/// host name unless a fingerprint is pinned, a root file given, or verification
/// explicitly disabled.
public struct TLSOptions: Sendable, Equatable {
    /// SHA-256 of the server's leaf certificate (64 hex digits, `:` allowed):
    /// pins that certificate instead of the CA check.
    public var fingerprint: String?
    /// A PEM file of CA certificates to trust instead of the system's.
    public var rootFile: String?
    /// Skips verification entirely. Insecure: for testing only.
    public var disableVerify: Bool

    public init(fingerprint: String? = nil, rootFile: String? = nil, disableVerify: Bool = false) {
        self.fingerprint = fingerprint
        self.rootFile = rootFile
        self.disableVerify = disableVerify
    }

    /// Validates the options (exclusive modes, fingerprint format, readable root file).
    @discardableResult
    public func checked() throws(MoqError) -> TLSOptions {
        _ = try verification()
        return self
    }

    /// Checks the options and returns the verification mode.
    func verification() throws(MoqError) -> CertificateVerification {
        let modes = [fingerprint != nil, rootFile != nil, disableVerify].filter { $0 }.count
        guard modes <= 1 else {
            throw .configuration(
                "choose one of tls-fingerprint, tls-root-file and tls-disable-verify: they exclude each other")
        }
        if let fingerprint {
            guard let bytes = Hex.decode(fingerprint, allowingColons: true), bytes.count == 32 else {
                throw .configuration(
                    "tls-fingerprint must be the SHA-256 of the certificate: 64 hex digits (got '\(fingerprint)')")
            }
            return .fingerprints([bytes])
        }
        if let rootFile {
            guard FileManager.default.isReadableFile(atPath: rootFile) else {
                throw .configuration("tls-root-file '\(rootFile)' cannot be read")
            }
            return .roots(file: rootFile)
        }
        return disableVerify ? .disabled : .system
    }
}

/// Options of a client session.
public struct ClientOptions: Sendable {
    /// Certificate checks.
    public var tls: TLSOptions
    /// A token sent as `?jwt=` (moq-relay's authentication).
    public var authToken: String?
    /// The role declared in SETUP (nil: both).
    public var role: SessionRole?
    /// How long connecting (QUIC + TLS + SETUP) may take.
    public var connectTimeout: Duration
    /// QUIC idle timeout (the Rust peers use 10 s; keep-alives go out well before).
    public var idleTimeout: Duration
    /// A PING goes out after this long without sending (zero: none). A player sends almost nothing,
    /// and after a NAT rebinding nothing arrives until the server hears it from the new address:
    /// this PING is what reaches it, so it bounds how long a rebinding freezes the picture.
    public var keepAliveInterval: Duration
    /// The hop id declared in SETUP (a relay reuses its own); random when nil.
    public var hopID: UInt64?
    /// The price of this link (a relay's peer link, moq-relay's `?cost=`): sent in SETUP and
    /// added to the routes the peer announces. Nil: the peer's price, or 1.
    public var linkCost: UInt64?
    /// For `http://` and `https://` URLs, also try moq-lite over WebSocket (qmux on the relay's TCP
    /// port; `wss://` with the same verification for `https://`) this long after QUIC, and keep whichever connects first: where UDP is blocked, WebSocket wins (moq-dev's
    /// clients do the same, 200 ms after). Nil: QUIC only. Once WebSocket has won for a relay in
    /// this process, later connections to it start both at once.
    public var webSocketDelay: Duration? = .milliseconds(200)
    /// The protocol family offered (``MoqProtocol/auto``: moq-lite first, then IETF MoQ Transport
    /// drafts 16 and 14, on raw QUIC and WebTransport). The server chooses; ``MoqSession/version``
    /// says what it chose.
    public var moqProtocol: MoqProtocol = .auto

    public init(
        tls: TLSOptions = TLSOptions(), authToken: String? = nil, role: SessionRole? = nil,
        connectTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(10),
        keepAliveInterval: Duration = .seconds(1)
    ) {
        self.tls = tls
        self.authToken = authToken
        self.role = role
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.keepAliveInterval = keepAliveInterval
    }
}

/// Where a server's certificate comes from.
public enum ServerCertificate: Sendable, Equatable {
    /// PEM files: the chain (leaf first) and its private key.
    case files(certificateChain: String, privateKey: String)
    /// A generated self-signed ECDSA P-256 certificate for these host names (14 days),
    /// like the Rust server's `tls_generate`; pin it by its fingerprint.
    case selfSigned(names: [String])
}

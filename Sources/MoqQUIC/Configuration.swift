// SPDX-License-Identifier: MIT
// Public configuration and result types of the QUIC transport. Pure Swift: no C type appears here.

/// Transport settings shared by clients and servers.
///
/// The defaults match what the Rust moq peers advertise (moq-ffi 0.4.18), except the keep-alive,
/// which is kept below their 10 s idle timeout.
public struct QUICSettings: Sendable {
    /// ALPN protocols, most preferred first (at most 8 entries of at most 31 bytes: a GnuTLS 3.7 limit).
    /// A server picks by its own order (`GNUTLS_ALPN_SERVER_PRECEDENCE`).
    public var alpn: [String] = ["moq-lite-06"]
    /// Idle timeout advertised in the transport parameters; the connection closes after this much silence.
    public var idleTimeout: Duration = .seconds(10)
    /// Interval after which a PING is sent if nothing else was (`ngtcp2_conn_set_keep_alive_timeout`).
    public var keepAliveInterval: Duration = .seconds(3)
    /// Give up a handshake that has not completed after this long (ngtcp2 has no default limit).
    public var handshakeTimeout: Duration = .seconds(10)
    /// Bidirectional streams the peer may have open at once (MAX_STREAMS); credit is returned as they close.
    public var maxBidiStreams: UInt64 = 10_000
    /// Unidirectional streams the peer may have open at once (MAX_STREAMS); credit is returned as they close.
    public var maxUniStreams: UInt64 = 10_000
    /// Initial receive window of each stream, in bytes. ngtcp2 may grow it (window auto-tuning) up to
    /// `min(maxData, 16 MiB)` when the bandwidth-delay product calls for it.
    public var maxStreamData: UInt64 = 1_250_000
    /// Receive window of the whole connection, in bytes; it never grows beyond this.
    public var maxData: UInt64 = 64 << 20
    /// Largest DATAGRAM frame accepted from the peer; 0 disables datagrams.
    public var maxDatagramFrameSize: UInt64 = 65_535
    /// When true (the default), flow-control credit for received stream data is returned as soon as
    /// it is delivered to the delegate. When false the application returns it with
    /// ``QUICConnection/consume(_:bytes:)`` once it has finished with the bytes, so a peer can never make
    /// it hold more than the receive windows (a moq session does this).
    public var automaticFlowControlCredit = true
    /// Servers only: connections accepted at once; further handshakes are dropped.
    public var maxConnections: Int = 1024
    /// Servers only: once this many handshakes are in progress, a new client must first prove
    /// its address with a stateless Retry round trip (RFC 9000 §8.1.2), so that spoofed
    /// Initials cost a packet, not a connection. 0 asks every client to.
    public var retryThreshold: Int = 64
    /// Servers only: handshakes in progress from one IP address; more Initials from it are dropped.
    public var maxHandshakesPerAddress: Int = 32
    /// The congestion controller. BBR by default: media over lossy paths is what this
    /// transport carries, and a loss-based controller (Cubic, Reno) shrinks its window at
    /// every random loss and every reordering it takes for one, below a video's bitrate
    /// (measured: 5 % loss with 50 ± 20 ms jitter on each leg, latency 300 ms — Cubic left
    /// 2–4 gaps per 5 s, BBR none; `docs/reliability.md`).
    public var congestionControl: CongestionControl = .bbr
    /// Test-only: drop this fraction of sent (`tx`) and received (`rx`) UDP datagrams, using a PRNG seeded
    /// with `seed` (like the `--tx-loss`/`--rx-loss` options of ngtcp2's example programs).
    public var testLoss: (tx: Double, rx: Double, seed: UInt64) = (0, 0, 1)

    /// The defaults described on each property.
    public init() {}
}

/// A congestion controller of ngtcp2.
public enum CongestionControl: String, Sendable, CaseIterable {
    /// ngtcp2's BBR (model-based: loss alone does not shrink the rate).
    case bbr
    /// CUBIC (RFC 9438), loss-based.
    case cubic
    /// NewReno (RFC 9002), loss-based.
    case reno
}

/// How a client checks the server's certificate.
public enum CertificateVerification: Sendable {
    /// Chain to the system's trusted CAs and match the host name (the default).
    case system
    /// Chain to the CAs in the PEM file at `file` and match the host name.
    /// A self-signed server certificate listed in the file is accepted as its own trust anchor.
    case roots(file: String)
    /// Accept exactly the leaf certificates whose DER has one of these SHA-256 digests (32 bytes each).
    /// Checked during the handshake; no CA chain or host name check.
    case fingerprints([[UInt8]])
    /// Accept any certificate. Only for when the user explicitly asks for it.
    case disabled
}

/// TLS options of a QUIC client.
public struct TLSClientConfiguration: Sendable {
    /// How the server certificate is verified; `.system` by default.
    public var verification: CertificateVerification = .system
    /// The name sent as SNI and checked against the certificate. Defaults to the host passed to
    /// ``QUICClient/connect(host:port:tls:settings:loop:delegate:)``; SNI is omitted for IP literals.
    public var serverName: String?

    /// A configuration with the given verification mode and server name.
    public init(verification: CertificateVerification = .system, serverName: String? = nil) {
        self.verification = verification
        self.serverName = serverName
    }
}

/// Where a server's certificate and key come from.
public enum ServerCertificateSource: Sendable {
    /// PEM files: the certificate chain (leaf first) and its private key.
    case files(certificateChain: String, privateKey: String)
    /// A freshly generated self-signed ECDSA P-256 certificate valid for these DNS names (IP literals become
    /// IP address SANs), valid from one day ago for 14 days: the same shape as the Rust server's rcgen certificate.
    case selfSigned(names: [String])
}

/// Why a connection ended. Delivered exactly once through
/// ``QUICConnectionDelegate/quicConnection(_:didCloseWith:)``.
public enum QUICCloseReason: Error, Sendable, Equatable, CustomStringConvertible {
    /// An application CONNECTION_CLOSE (frame 0x1d), sent by us (`byPeer == false`) or by the peer.
    case application(code: UInt64, reason: String, byPeer: Bool)
    /// A transport CONNECTION_CLOSE (frame 0x1c) with a QUIC transport error code.
    case transport(code: UInt64, reason: String, byPeer: Bool)
    /// Nothing was received for the idle timeout.
    case idleTimeout
    /// The handshake did not complete within ``QUICSettings/handshakeTimeout``.
    case handshakeTimeout
    /// The TLS handshake failed; the text says what happened and what to do about it.
    case tls(String)
    /// The peer cannot be reached: DNS failure, ICMP unreachable, socket errors.
    case unreachable(String)
    /// Client and server have no application protocol (ALPN) in common.
    case alpn(String)

    /// A one-line, human-readable description.
    public var description: String {
        switch self {
        case .application(let code, let reason, let byPeer):
            "application close \(code)\(reason.isEmpty ? "" : " (\(reason))") by \(byPeer ? "peer" : "us")"
        case .transport(let code, let reason, let byPeer):
            "transport close 0x\(String(code, radix: 16))\(reason.isEmpty ? "" : " (\(reason))") by \(byPeer ? "peer" : "us")"
        case .idleTimeout: "idle timeout"
        case .handshakeTimeout: "handshake timeout"
        case .tls(let text): "TLS: \(text)"
        case .unreachable(let text): "unreachable: \(text)"
        case .alpn(let text): "ALPN: \(text)"
        }
    }
}

/// What a server did with packets that were not (yet) connections.
public struct QUICServerStats: Sendable, Equatable {
    /// Retry packets sent (address validation before any state is kept).
    public var retriesSent: UInt64 = 0
    /// Initials whose Retry token did not verify (answered with INVALID_TOKEN).
    public var invalidTokens: UInt64 = 0
    /// Initials dropped because their address already had ``QUICSettings/maxHandshakesPerAddress``
    /// handshakes in progress, or the server ``QUICSettings/maxConnections``.
    public var handshakesRefused: UInt64 = 0
    /// Version Negotiation packets sent (only for datagrams of 1200 bytes or more, RFC 9000 §6.1).
    public var versionNegotiations: UInt64 = 0

    public init() {}

    /// Both counts summed (the loops of a sharded server).
    public func adding(_ other: QUICServerStats) -> QUICServerStats {
        var sum = self
        sum.retriesSent &+= other.retriesSent
        sum.invalidTokens &+= other.invalidTokens
        sum.handshakesRefused &+= other.handshakesRefused
        sum.versionNegotiations &+= other.versionNegotiations
        return sum
    }
}

/// A snapshot of a connection's transport statistics.
public struct QUICStats: Sendable, Equatable {
    /// Smoothed round-trip time (RFC 9002).
    public var smoothedRTT: Duration = .zero
    /// Minimum round-trip time observed.
    public var minRTT: Duration = .zero
    /// Most recent round-trip time sample.
    public var latestRTT: Duration = .zero
    /// Round-trip time variation.
    public var rttVariance: Duration = .zero
    /// Congestion window, in bytes.
    public var congestionWindow: UInt64 = 0
    /// Bytes sent but not yet acknowledged or declared lost.
    public var bytesInFlight: UInt64 = 0
    /// UDP payload bytes sent (including any dropped by the test loss knob).
    public var bytesSent: UInt64 = 0
    /// UDP payload bytes received (including any dropped by the test loss knob).
    public var bytesReceived: UInt64 = 0
    /// UDP datagrams sent.
    public var packetsSent: UInt64 = 0
    /// UDP datagrams received.
    public var packetsReceived: UInt64 = 0
    /// Send system calls made for this connection: fewer than ``packetsSent`` when segmentation
    /// offload (UDP_SEGMENT) sends batches of packets in one call.
    public var sendCalls: UInt64 = 0
    /// Packets carrying STREAM data that ngtcp2 declared lost (`ngtcp2_conn_get_stream_loss_count`, summed over
    /// streams; ngtcp2 1.11 exposes no connection-wide loss counter). May include spurious losses.
    public var packetsLost: UInt64 = 0
    /// Outgoing datagrams dropped because ``QUICConnection/maxQueuedDatagrams`` were already queued.
    public var datagramsDropped: UInt64 = 0
    /// Datagrams dropped on purpose by ``QUICSettings/testLoss`` (sent + received).
    public var packetsDroppedByTestLoss: UInt64 = 0
    /// Estimated send rate in bits per second: UDP payload bits sent over the most recent window of at least
    /// 100 ms (0 after a second without sending). The congestion-limited ceiling is `congestionWindow / smoothedRTT`.
    public var estimatedSendRate: UInt64 = 0
    /// Estimated receive rate in bits per second, measured like ``estimatedSendRate`` over the UDP
    /// payload bytes received.
    public var estimatedReceiveRate: UInt64 = 0

    /// Zeroed statistics.
    public init() {}
}

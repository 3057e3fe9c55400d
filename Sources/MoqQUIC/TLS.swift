// SPDX-License-Identifier: MIT
// GnuTLS sessions for QUIC: TLS 1.3 only, ALPN, server identities, and certificate verification
// (CA chain + host name, or SHA-256 pinning) done during the handshake.
internal import CNgtcp2
internal import Glibc
import MoqBase

/// TLS 1.3 only, QUIC-friendly (no middlebox compatibility mode), the groups and ciphers that interoperate
/// with the Rust moq peers (measured: X25519 + AES-128-GCM with the Rust server, AES-256-GCM with its client).
let quicPriority =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    + "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1"

/// The certificate and key a server presents, loaded from PEM files or generated (self-signed ECDSA P-256).
///
/// Immutable after creation and safe to share between servers and threads (GnuTLS credentials are only read).
public final class ServerIdentity: @unchecked Sendable {
    /// Lowercase hex SHA-256 of the leaf certificate's DER: what a client pins.
    public let fingerprint: String
    /// The leaf certificate in PEM, e.g. to write a roots file for ``CertificateVerification/roots(file:)``.
    public let certificatePEM: String
    let credentials: OpaquePointer

    /// Loads or generates the identity.
    /// - Throws: `QUICError.certificate` or `QUICError.tls` naming the GnuTLS function that failed.
    public init(_ source: ServerCertificateSource) throws(QUICError) {
        var cred: OpaquePointer?
        try Sys.tls("gnutls_certificate_allocate_credentials", gnutls_certificate_allocate_credentials(&cred))
        guard let cred else { throw QUICError.certificate("gnutls_certificate_allocate_credentials returned nothing") }
        do throws(QUICError) {
            let leaf: OpaquePointer
            switch source {
            case .files(let chain, let key):
                let rc = gnutls_certificate_set_x509_key_file(cred, chain, key, GNUTLS_X509_FMT_PEM)
                if rc < 0 {
                    throw QUICError.certificate(
                        "cannot load certificate chain \(chain) with key \(key): \(Sys.tlsText(rc)) (gnutls_certificate_set_x509_key_file)"
                    )
                }
                leaf = try Self.loadLeaf(chain)
            case .selfSigned(let names):
                let (crt, privateKey) = try Self.generate(names: names)
                defer { gnutls_x509_privkey_deinit(privateKey) }
                var list: OpaquePointer? = crt
                let rc = gnutls_certificate_set_x509_key(cred, &list, 1, privateKey)
                if rc < 0 {
                    gnutls_x509_crt_deinit(crt)
                    throw Sys.tlsError("gnutls_certificate_set_x509_key", rc)
                }
                leaf = crt
            }
            defer { gnutls_x509_crt_deinit(leaf) }
            let der = try Self.export(leaf, GNUTLS_X509_FMT_DER)
            fingerprint = Hex.encode(sha256(der))
            certificatePEM = String(decoding: try Self.export(leaf, GNUTLS_X509_FMT_PEM), as: UTF8.self)
        } catch {
            gnutls_certificate_free_credentials(cred)
            throw error
        }
        credentials = cred
    }

    deinit { gnutls_certificate_free_credentials(credentials) }

    private static func loadLeaf(_ path: String) throws(QUICError) -> OpaquePointer {
        var datum = gnutls_datum_t()
        let rc = gnutls_load_file(path, &datum)
        if rc < 0 { throw QUICError.certificate("cannot read \(path): \(Sys.tlsText(rc)) (gnutls_load_file)") }
        defer { moq_gnutls_free(datum.data) }
        var crt: OpaquePointer?
        try Sys.tls("gnutls_x509_crt_init", gnutls_x509_crt_init(&crt))
        let irc = gnutls_x509_crt_import(crt, &datum, GNUTLS_X509_FMT_PEM)
        if irc < 0 {
            gnutls_x509_crt_deinit(crt)
            throw QUICError.certificate(
                "cannot parse the first certificate of \(path): \(Sys.tlsText(irc)) (gnutls_x509_crt_import)")
        }
        return crt!
    }

    static func export(_ crt: OpaquePointer, _ format: gnutls_x509_crt_fmt_t) throws(QUICError) -> [UInt8] {
        var out = gnutls_datum_t()
        try Sys.tls("gnutls_x509_crt_export2", gnutls_x509_crt_export2(crt, format, &out))
        defer { moq_gnutls_free(out.data) }
        return Array(UnsafeBufferPointer(start: out.data, count: Int(out.size)))
    }

    /// A self-signed ECDSA P-256 certificate for `names`, valid now−1 day … now+13 days (14 days, like rcgen).
    static func generate(names: [String]) throws(QUICError) -> (OpaquePointer, OpaquePointer) {
        guard !names.isEmpty else { throw QUICError.invalidArgument("selfSigned needs at least one name") }
        var key: OpaquePointer?
        try Sys.tls("gnutls_x509_privkey_init", gnutls_x509_privkey_init(&key))
        var crt: OpaquePointer?
        do throws(QUICError) {
            try Sys.tls(
                "gnutls_x509_privkey_generate",
                gnutls_x509_privkey_generate(
                    key, GNUTLS_PK_ECDSA, moq_gnutls_curve_to_bits(GNUTLS_ECC_CURVE_SECP256R1), 0))
            try Sys.tls("gnutls_x509_crt_init", gnutls_x509_crt_init(&crt))
            try Sys.tls("gnutls_x509_crt_set_version", gnutls_x509_crt_set_version(crt, 3))
            var serial = [UInt8](repeating: 0, count: 16)
            serial.withUnsafeMutableBytes { Sys.random($0) }
            serial[0] &= 0x7f  // positive
            try Sys.tls("gnutls_x509_crt_set_serial", gnutls_x509_crt_set_serial(crt, serial, serial.count))
            let now = time(nil)
            try Sys.tls("gnutls_x509_crt_set_activation_time", gnutls_x509_crt_set_activation_time(crt, now - 86_400))
            try Sys.tls(
                "gnutls_x509_crt_set_expiration_time", gnutls_x509_crt_set_expiration_time(crt, now + 13 * 86_400))
            let cn = "swiftmoq self signed cert"
            try Sys.tls(
                "gnutls_x509_crt_set_dn_by_oid",
                gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, UInt32(cn.utf8.count)))
            for (i, name) in names.enumerated() {
                let flags = UInt32(i == 0 ? GNUTLS_FSAN_SET : GNUTLS_FSAN_APPEND)
                var v4 = in_addr()
                var v6 = in6_addr()
                let rc: Int32
                if inet_pton(AF_INET, name, &v4) == 1 {
                    rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, &v4, 4, flags)
                } else if inet_pton(AF_INET6, name, &v6) == 1 {
                    rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, &v6, 16, flags)
                } else {
                    rc = gnutls_x509_crt_set_subject_alt_name(
                        crt, GNUTLS_SAN_DNSNAME, name, UInt32(name.utf8.count), flags)
                }
                try Sys.tls("gnutls_x509_crt_set_subject_alt_name(\(name))", rc)
            }
            try Sys.tls("gnutls_x509_crt_set_basic_constraints", gnutls_x509_crt_set_basic_constraints(crt, 0, -1))
            try Sys.tls(
                "gnutls_x509_crt_set_key_usage",
                gnutls_x509_crt_set_key_usage(crt, UInt32(GNUTLS_KEY_DIGITAL_SIGNATURE)))
            try Sys.tls(
                "gnutls_x509_crt_set_key_purpose_oid",
                gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0))
            try Sys.tls("gnutls_x509_crt_set_key", gnutls_x509_crt_set_key(crt, key))
            try Sys.tls("gnutls_x509_crt_sign2", gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0))
        } catch {
            if let crt { gnutls_x509_crt_deinit(crt) }
            gnutls_x509_privkey_deinit(key)
            throw QUICError.certificate("cannot generate a self-signed certificate: \(error)")
        }
        return (crt!, key!)
    }
}

/// SHA-256 of `bytes` (GnuTLS).
func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    let rc = out.withUnsafeMutableBytes {
        gnutls_hash_fast(GNUTLS_DIG_SHA256, bytes.baseAddress, bytes.count, $0.baseAddress)
    }
    precondition(rc == 0, "gnutls_hash_fast failed: \(Sys.tlsText(rc))")
    return out
}

func sha256(_ bytes: [UInt8]) -> [UInt8] {
    bytes.withUnsafeBytes { sha256($0) }
}

/// One GnuTLS session plus the client credentials it owns, and — for a client — how the server's
/// certificate is verified and why it was refused. Loop thread only.
final class TLSSession {
    let session: OpaquePointer
    private let ownedCredentials: OpaquePointer?
    private let identity: ServerIdentity?
    /// What a client checks the server's certificate against (nil for a server session).
    private let verification: (config: TLSClientConfiguration, host: String)?
    /// Why the server's certificate was refused, once it was (an actionable message).
    private(set) var verificationFailure: String?

    /// A client session. `connRef` is what ngtcp2's crypto layer finds through `gnutls_session_get_ptr`.
    init(
        client tls: TLSClientConfiguration, host: String, alpn: [String],
        connRef: UnsafeMutablePointer<ngtcp2_crypto_conn_ref>
    ) throws(QUICError) {
        let cred = try clientCredentials(tls)
        var s: OpaquePointer?
        do throws(QUICError) {
            try Sys.tls("gnutls_init", gnutls_init(&s, UInt32(GNUTLS_CLIENT.rawValue)))
            guard let session = s else { throw QUICError.certificate("gnutls_init returned no session") }
            if ngtcp2_crypto_gnutls_configure_client_session(session) != 0 {
                throw QUICError.tls(
                    function: "ngtcp2_crypto_gnutls_configure_client_session", code: -1, message: "failed")
            }
            try Self.common(session, alpn: alpn, server: false)
            try configureClient(session, credentials: cred, tls: tls, host: host)
            if case .disabled = tls.verification {
            } else {
                gnutls_session_set_verify_function(session, verifyTrampoline)
            }
            gnutls_session_set_ptr(session, connRef)
            self.session = session
        } catch {
            if let s { gnutls_deinit(s) }
            gnutls_certificate_free_credentials(cred)
            throw error
        }
        ownedCredentials = cred
        identity = nil
        verification = (tls, host)
    }

    /// A server session presenting `identity`.
    init(server identity: ServerIdentity, alpn: [String], connRef: UnsafeMutablePointer<ngtcp2_crypto_conn_ref>)
        throws(QUICError)
    {
        var s: OpaquePointer?
        do throws(QUICError) {
            try Sys.tls(
                "gnutls_init",
                gnutls_init(&s, UInt32(GNUTLS_SERVER.rawValue) | UInt32(GNUTLS_NO_AUTO_SEND_TICKET.rawValue)))
            guard let session = s else { throw QUICError.certificate("gnutls_init returned no session") }
            if ngtcp2_crypto_gnutls_configure_server_session(session) != 0 {
                throw QUICError.tls(
                    function: "ngtcp2_crypto_gnutls_configure_server_session", code: -1, message: "failed")
            }
            try Self.common(session, alpn: alpn, server: true)
            try Sys.tls(
                "gnutls_credentials_set",
                gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, UnsafeMutableRawPointer(identity.credentials)))
            gnutls_session_set_ptr(session, connRef)
            self.session = session
        } catch {
            if let s { gnutls_deinit(s) }
            throw error
        }
        ownedCredentials = nil
        self.identity = identity
        verification = nil
    }

    deinit {
        gnutls_deinit(session)
        if let ownedCredentials { gnutls_certificate_free_credentials(ownedCredentials) }
    }

    private static func common(_ session: OpaquePointer, alpn: [String], server: Bool) throws(QUICError) {
        try Sys.tls("gnutls_priority_set_direct", gnutls_priority_set_direct(session, quicPriority, nil))
        try validateALPN(alpn)
        // One contiguous buffer holds every protocol name for the duration of the call (GnuTLS copies them).
        let total = alpn.reduce(0) { $0 + $1.utf8.count }
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: total)
        defer { bytes.deallocate() }
        var datums: [gnutls_datum_t] = []
        var offset = 0
        for p in alpn {
            let utf8 = Array(p.utf8)
            (bytes + offset).initialize(from: utf8, count: utf8.count)
            datums.append(gnutls_datum_t(data: bytes + offset, size: UInt32(utf8.count)))
            offset += utf8.count
        }
        var flags = UInt32(GNUTLS_ALPN_MANDATORY.rawValue)
        if server { flags |= UInt32(GNUTLS_ALPN_SERVER_PRECEDENCE.rawValue) }
        // A failure may leave part of the list set: always fatal.
        let rc = gnutls_alpn_set_protocols(session, &datums, UInt32(datums.count), flags)
        if rc != 0 { throw Sys.tlsError("gnutls_alpn_set_protocols", rc) }
    }

    static func validateALPN(_ alpn: [String]) throws(QUICError) {
        if alpn.isEmpty || alpn.count > 8 {
            throw QUICError.invalidArgument("ALPN list must have 1…8 entries (GnuTLS 3.7 limit), got \(alpn.count)")
        }
        for p in alpn where p.utf8.isEmpty || p.utf8.count > 31 {
            throw QUICError.invalidArgument("ALPN protocol \"\(p)\" must be 1…31 bytes (GnuTLS limit)")
        }
    }

    /// The protocol the handshake selected, if any.
    var selectedALPN: String? {
        var d = gnutls_datum_t()
        guard gnutls_alpn_get_selected_protocol(session, &d) == 0, let data = d.data else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(d.size)), as: UTF8.self)
    }

    /// SHA-256 of the peer's leaf certificate DER, lowercase hex.
    var peerFingerprint: String? {
        var n: UInt32 = 0
        guard let list = gnutls_certificate_get_peers(session, &n), n > 0, let data = list[0].data else { return nil }
        return Hex.encode(sha256(UnsafeRawBufferPointer(start: data, count: Int(list[0].size))))
    }
}

/// A client's certificate credentials for `tls`: the trust anchors it verifies against (none for
/// pins or no verification). The caller frees them.
func clientCredentials(_ tls: TLSClientConfiguration) throws(QUICError) -> OpaquePointer {
    var c: OpaquePointer?
    try Sys.tls("gnutls_certificate_allocate_credentials", gnutls_certificate_allocate_credentials(&c))
    guard let cred = c else { throw QUICError.certificate("gnutls_certificate_allocate_credentials returned nothing") }
    do throws(QUICError) {
        switch tls.verification {
        case .system:
            let rc = gnutls_certificate_set_x509_system_trust(cred)
            if rc < 0 { throw Sys.tlsError("gnutls_certificate_set_x509_system_trust", rc) }
        case .roots(let file):
            let rc = gnutls_certificate_set_x509_trust_file(cred, file, GNUTLS_X509_FMT_PEM)
            if rc < 0 {
                throw QUICError.certificate(
                    "cannot load trust roots from \(file): \(Sys.tlsText(rc)) (gnutls_certificate_set_x509_trust_file)"
                )
            }
            if rc == 0 { throw QUICError.certificate("no certificates found in trust roots file \(file)") }
        case .fingerprints(let pins):
            if pins.isEmpty || pins.contains(where: { $0.count != 32 }) {
                throw QUICError.invalidArgument("each pinned fingerprint must be a 32-byte SHA-256 digest")
            }
        case .disabled:
            break
        }
    } catch {
        gnutls_certificate_free_credentials(cred)
        throw error
    }
    return cred
}

/// A client session's certificate credentials and server name (SNI, omitted for IP literals): the
/// same for QUIC and for TLS over TCP.
func configureClient(
    _ session: OpaquePointer, credentials: OpaquePointer, tls: TLSClientConfiguration, host: String
) throws(QUICError) {
    try Sys.tls(
        "gnutls_credentials_set",
        gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, UnsafeMutableRawPointer(credentials)))
    let serverName = tls.serverName ?? host
    if !SocketAddress.isIPLiteral(serverName) {
        try Sys.tls(
            "gnutls_server_name_set",
            gnutls_server_name_set(session, GNUTLS_NAME_DNS, serverName, serverName.utf8.count))
    }
}

/// Called by GnuTLS during the handshake once the server's certificate has arrived.
/// Returning non-zero aborts the handshake with a `bad_certificate` alert.
private let verifyTrampoline: @convention(c) (OpaquePointer?) -> Int32 = { session in
    guard let session, let ref = gnutls_session_get_ptr(session) else { return GNUTLS_E_CERTIFICATE_ERROR }
    let connRef = ref.assumingMemoryBound(to: ngtcp2_crypto_conn_ref.self)
    guard let userData = connRef.pointee.user_data else { return GNUTLS_E_CERTIFICATE_ERROR }
    let connection = Unmanaged<QUICConnection>.fromOpaque(userData).takeUnretainedValue()
    // Only client sessions install this callback, and the connection holds its session throughout
    // the handshake: a session that is not there refuses the certificate instead of trapping.
    guard let tls = connection.tls else { return GNUTLS_E_CERTIFICATE_ERROR }
    return tls.verifyServerCertificate() ? 0 : GNUTLS_E_CERTIFICATE_ERROR
}

extension TLSSession {
    /// Checks the server's certificate; on refusal, keeps the reason in ``verificationFailure``.
    func verifyServerCertificate() -> Bool {
        guard let verification else {
            verificationFailure = "no verification settings for a client session"
            return false
        }
        verificationFailure = verifyPeer(session, verification)
        return verificationFailure == nil
    }
}

/// Checks the peer certificate per `tls`. Returns nil when accepted, else an actionable message.
func verifyPeer(_ session: OpaquePointer, _ tls: (config: TLSClientConfiguration, host: String)) -> String? {
    var n: UInt32 = 0
    guard let list = gnutls_certificate_get_peers(session, &n), n > 0, let leafData = list[0].data else {
        return "the server sent no certificate"
    }
    let digest = sha256(UnsafeRawBufferPointer(start: leafData, count: Int(list[0].size)))
    let fingerprint = Hex.encode(digest)
    let hostname = tls.config.serverName ?? tls.host
    switch tls.config.verification {
    case .disabled:
        return nil
    case .fingerprints(let pins):
        // Pins are digests (validated as 32 bytes once, when the configuration was made): compared as bytes.
        if pins.contains(digest) { return nil }
        let expected = pins.map { Hex.encode($0) }.joined(separator: " or ")
        return "certificate fingerprint mismatch: server sent sha256 \(fingerprint), expected \(expected)"
    case .system, .roots:
        var status: UInt32 = 0
        let rc = gnutls_certificate_verify_peers3(session, hostname, &status)
        if rc < 0 { return "certificate verification failed: \(Sys.tlsText(rc)) (gnutls_certificate_verify_peers3)" }
        if status == 0 { return nil }
        var out = gnutls_datum_t()
        var text = "status 0x\(String(status, radix: 16))"
        if gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0, let d = out.data {
            text = String(decoding: UnsafeBufferPointer(start: d, count: Int(out.size)), as: UTF8.self)
            moq_gnutls_free(out.data)
        }
        let anchor: String
        if case .roots(let file) = tls.config.verification {
            anchor = "the roots in \(file)"
        } else {
            anchor = "the system CAs"
        }
        // GnuTLS sets INVALID together with every specific reason, so a host-name-only failure is
        // INVALID | UNEXPECTED_OWNER.
        let owner = UInt32(GNUTLS_CERT_UNEXPECTED_OWNER.rawValue)
        let onlyHostName = status & owner != 0 && status & ~(owner | UInt32(GNUTLS_CERT_INVALID.rawValue)) == 0
        let what =
            onlyHostName ? "certificate does not match host name \(hostname)" : "certificate not trusted by \(anchor)"
        return "\(what): \(text) (server certificate sha256 \(fingerprint); pin it with --tls-fingerprint "
            + "\(fingerprint) or use --tls-root-file with its CA)"
    }
}

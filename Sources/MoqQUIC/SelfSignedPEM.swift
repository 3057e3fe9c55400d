// SPDX-License-Identifier: MIT
internal import CNgtcp2

extension ServerIdentity {
    /// A new self-signed ECDSA P-256 certificate for `names` and its private key, both in PEM.
    ///
    /// Written to files and loaded with ``ServerCertificateSource/files(certificateChain:privateKey:)``,
    /// they give a server the same identity (and fingerprint) across restarts, which a generated
    /// identity cannot: the test kit restarts its relay on the same port with the same pin.
    public static func generateSelfSignedPEM(names: [String]) throws(QUICError) -> (
        certificate: String, privateKey: String
    ) {
        let (crt, key) = try generate(names: names)
        defer {
            gnutls_x509_crt_deinit(crt)
            gnutls_x509_privkey_deinit(key)
        }
        let certificate = try export(crt, GNUTLS_X509_FMT_PEM)
        var out = gnutls_datum_t()
        try Sys.tls("gnutls_x509_privkey_export2", gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out))
        defer { moq_gnutls_free(out.data) }
        let privateKey = Array(UnsafeBufferPointer(start: out.data, count: Int(out.size)))
        return (String(decoding: certificate, as: UTF8.self), String(decoding: privateKey, as: UTF8.self))
    }
}

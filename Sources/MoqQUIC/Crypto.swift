// SPDX-License-Identifier: MIT
internal import CNgtcp2

/// Digests from GnuTLS for the layers above (fingerprints, relay token checks), so
/// that GnuTLS stays wrapped in this one module.
public enum Crypto {
    /// SHA-256 of `bytes`.
    public static func sha256(of bytes: [UInt8]) -> [UInt8] { MoqQUIC.sha256(bytes) }

    /// HMAC-SHA-256 of `data` under `key`.
    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let rc = key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                out.withUnsafeMutableBytes { o in
                    gnutls_hmac_fast(GNUTLS_MAC_SHA256, k.baseAddress, k.count, d.baseAddress, d.count, o.baseAddress)
                }
            }
        }
        precondition(rc == 0, "gnutls_hmac_fast failed: \(rc)")
        return out
    }

    /// Compares without an early exit (for signatures).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

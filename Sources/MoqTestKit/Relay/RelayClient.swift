// SPDX-License-Identifier: MIT
public import SwiftMoQ

extension MoqRelay {
    /// A client session to this relay on 127.0.0.1, pinned to its certificate.
    ///
    /// - Parameters:
    ///   - path: the URL path (the relay's auth root), `anon` by default.
    ///   - scheme: `moql` (raw QUIC), `https`/`http` (WebTransport), `ws`/`wss`.
    ///   - port: another port than the relay's own (a proxy in front of it, say).
    ///   - configure: changes to the options (token, timeouts, pin off) before connecting.
    public func connectClient(
        path: String = "anon", scheme: String = "moql", port: UInt16? = nil,
        configure: (inout ClientOptions) -> Void = { _ in }
    ) async throws(MoqError) -> MoqSession {
        var options = ClientOptions(tls: TLSOptions(fingerprint: fingerprint))
        configure(&options)
        return try await MoqSession.connect("\(scheme)://127.0.0.1:\(port ?? self.port)/\(path)", options: options)
    }
}

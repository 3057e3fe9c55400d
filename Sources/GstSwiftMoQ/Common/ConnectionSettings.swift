// SPDX-License-Identifier: MIT
import SwiftMoQ

/// The connection properties both elements share, and their validation.
struct ConnectionSettings: Sendable {
    var url: String?
    var tlsDisableVerify = false
    var tlsFingerprint: String?
    var tlsRootFile: String?
    var authToken: String?
    var quicIdleTimeoutMs = Self.defaultIdleTimeoutMs
    var quicKeepAliveMs = Self.defaultKeepAliveMs
    var moqProtocol = MoqProtocol.auto

    /// `quic-idle-timeout`'s default: ``ClientOptions``' (10 s, as moq-dev's peers).
    static let defaultIdleTimeoutMs = UInt32(ClientOptions().idleTimeout.components.seconds * 1000)
    /// `quic-keep-alive`'s default: ``ClientOptions``' (1 s).
    static let defaultKeepAliveMs = UInt32(ClientOptions().keepAliveInterval.components.seconds * 1000)

    /// The URL and client options, or an error message saying what to fix.
    func resolve() -> Result<(MoqURL, ClientOptions), SettingsError> {
        guard let text = url, !text.isEmpty else {
            return .failure(SettingsError("no relay URL: set the url property, e.g. url=moql://localhost:4443/anon"))
        }
        let parsed: MoqURL
        do { parsed = try MoqURL(text) } catch { return .failure(SettingsError("invalid url property: \(error)")) }
        if !moqProtocol.offersMoqLite, parsed.isWebSocket {
            return .failure(
                SettingsError(
                    "protocol=\(moqProtocol) (IETF MoQ Transport) runs on QUIC and WebTransport: use a moql:// or https:// URL, or protocol=auto for \(parsed.scheme)://"
                ))
        }
        var options = ClientOptions()
        options.moqProtocol = moqProtocol
        options.tls = TLSOptions(fingerprint: tlsFingerprint, rootFile: tlsRootFile, disableVerify: tlsDisableVerify)
        options.authToken = authToken
        options.idleTimeout = .milliseconds(quicIdleTimeoutMs)
        options.keepAliveInterval = .milliseconds(quicKeepAliveMs)
        do { _ = try options.tls.checked() } catch { return .failure(SettingsError(error.description)) }
        return .success((parsed, options))
    }
}

/// A property problem, worded for the user.
struct SettingsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

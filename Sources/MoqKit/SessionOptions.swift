// SPDX-License-Identifier: MIT
public import SwiftMoQ

/// How a ``Session`` (and the players and publishers it creates) connects.
public struct SessionOptions: Sendable {
    /// Certificate checks: verified against the system CAs unless pinned or disabled.
    public var tls: TLSOptions
    /// A token sent as `?jwt=`.
    public var authToken: String?
    /// Reconnect after a loss (moq-kit does not; the default here is true).
    public var reconnect: Bool
    /// The protocol family offered (default ``MoqProtocol/auto``: moq-lite first, then IETF MoQ
    /// Transport, which IETF-only relays such as Cloudflare's choose).
    public var moqProtocol: MoqProtocol = .auto

    /// Options with verification on, no token, reconnecting.
    public init(tls: TLSOptions = TLSOptions(), authToken: String? = nil, reconnect: Bool = true) {
        self.tls = tls
        self.authToken = authToken
        self.reconnect = reconnect
    }

    /// `tls-fingerprint=… auth-token=…` for the GStreamer elements a player or publisher uses.
    var elementProperties: [(String, String)] {
        var properties: [(String, String)] = []
        if let fingerprint = tls.fingerprint { properties.append(("tls-fingerprint", fingerprint)) }
        if let root = tls.rootFile { properties.append(("tls-root-file", root)) }
        if tls.disableVerify { properties.append(("tls-disable-verify", "true")) }
        if let authToken { properties.append(("auth-token", authToken)) }
        if moqProtocol != .auto { properties.append(("protocol", moqProtocol.rawValue)) }
        return properties
    }

    var client: ClientOptions {
        var options = ClientOptions()
        options.tls = tls
        options.authToken = authToken
        options.moqProtocol = moqProtocol
        return options
    }
}

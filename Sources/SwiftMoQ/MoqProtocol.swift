// SPDX-License-Identifier: MIT
import MoqWire
public import MoqtWire

/// Which protocol family a client offers: moq-lite (this project's, and moq-dev's default) or
/// IETF MoQ Transport (Cloudflare's network, moxygen, imquic, … speak only that).
///
/// The server picks among what is offered (TLS ALPN): moq-dev's relays and ours prefer moq-lite
/// when both are offered, so ``auto`` keeps moq-lite wherever it is spoken and reaches IETF-only
/// relays too. Over WebTransport (`https://`) the same list goes in the CONNECT's
/// `wt-available-protocols` and the server's `wt-protocol` answers it (moq-dev's and Cloudflare's
/// rule); WebSocket URLs carry moq-lite only.
public enum MoqProtocol: String, Sendable, CaseIterable, CustomStringConvertible {
    /// moq-lite-06 first, then MoQ Transport draft-16 and draft-14 (the default).
    case auto
    /// moq-lite-06 only.
    case moqLite = "moq-lite"
    /// MoQ Transport only: draft-16 (ALPN `moqt-16`), then draft-14 (`moq-00`).
    case ietf
    /// MoQ Transport draft-16 only.
    case ietf16 = "ietf-16"
    /// MoQ Transport draft-14 only (Cloudflare's global relays).
    case ietf14 = "ietf-14"

    /// The name used by element properties and the CLI (`auto`, `moq-lite`, `ietf`, `ietf-16`, `ietf-14`).
    public var description: String { rawValue }

    /// Parses a name (see ``description``); nil for an unknown one.
    public init?(name: String) { self.init(rawValue: name.lowercased()) }

    /// True when moq-lite is offered.
    public var offersMoqLite: Bool { self == .auto || self == .moqLite }

    /// The MoQ Transport drafts offered, in order of preference.
    public var ietfVersions: [MoqtVersion] {
        switch self {
        case .auto, .ietf: [.draft16, .draft14]
        case .moqLite: []
        case .ietf16: [.draft16]
        case .ietf14: [.draft14]
        }
    }

    /// The ALPN list a raw-QUIC client offers (and a WebTransport client's protocols), in order.
    var alpns: [String] { (offersMoqLite ? MoqVersion.alpn : []) + ietfVersions.map(\.alpn) }

    /// What a user may write, for error messages.
    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

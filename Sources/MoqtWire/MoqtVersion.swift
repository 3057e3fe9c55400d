// SPDX-License-Identifier: MIT

/// The IETF MoQ Transport drafts this codec speaks (docs/ietf/moqt-wire.md §2).
///
/// Draft-14 is reached with ALPN `moq-00` and confirmed in SETUP (the client lists version codes,
/// the server selects one); draft-15 and later are chosen by ALPN alone and their SETUP has no
/// version fields.
public enum MoqtVersion: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// draft-ietf-moq-transport-14 (Cloudflare's global relays; ALPN `moq-00`).
    case draft14
    /// draft-ietf-moq-transport-16 (ALPN `moqt-16`).
    case draft16

    /// The ALPN offered for this version on raw QUIC.
    public var alpn: String {
        switch self {
        case .draft14: "moq-00"
        case .draft16: "moqt-16"
        }
    }

    /// The version code (`0xff000000 + draft`), carried in draft-14's SETUP.
    public var code: UInt64 {
        switch self {
        case .draft14: 0xff00_000e
        case .draft16: 0xff00_0010
        }
    }

    /// The version an ALPN selects, if it is one of ours. `moq-00` is draft-14 only once SETUP
    /// confirms it (its version list).
    public init?(alpn: String) {
        switch alpn {
        case "moq-00": self = .draft14
        case "moqt-16": self = .draft16
        default: return nil
        }
    }

    /// The version a draft-14 SETUP code names.
    public init?(code: UInt64) {
        guard let version = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = version
    }

    /// Key-value pairs carry each type as a delta from the previous one, sorted (draft-16), or
    /// absolute in any order (draft-14).
    var deltaKeys: Bool { self == .draft16 }

    public var description: String {
        switch self {
        case .draft14: "draft-14"
        case .draft16: "draft-16"
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqWire

/// A link to another relay, as moq-relay's `--cluster-connect`: one moq-lite session both ways,
/// dialled and redialled by this relay. Each side offers its whole origin (split horizon: never a
/// route through the other) and subscribes on demand; what the other offers is a route here,
/// priced with the link's cost.
public struct PeerLink: Sendable, Equatable {
    /// Where to dial (its path is the root this relay's broadcasts are offered under there and
    /// the other's are offered under here: `/` for a cluster peer).
    public var url: MoqURL
    /// The link's price (`?cost=N`): sent in SETUP and added to every route learnt through it.
    /// Nil: the other relay's price, or 1.
    public var cost: UInt64?
    /// How the other relay's certificate is checked.
    public var tls: TLSOptions
    /// A token sent as `?jwt=` (`--cluster-token`): a peer grant on the other side.
    public var token: String?

    public init(url: MoqURL, cost: UInt64? = nil, tls: TLSOptions = TLSOptions(), token: String? = nil) {
        self.url = url
        self.cost = cost
        self.tls = tls
        self.token = token
    }

    /// Parses moq-relay's spelling: a URL whose `cost=N` query item (a varint) prices the link and
    /// is not sent; `jwt=` stays in the URL. A bare host means `https://host/`.
    public init(parsing text: String, tls: TLSOptions = TLSOptions(), token: String? = nil) throws(MoqError) {
        let spelled = text.contains("://") ? text : "https://\(text)\(text.contains("/") ? "" : "/")"
        var cost: UInt64?
        var kept: [Substring] = []
        let (head, query) =
            spelled.firstIndex(of: "?").map { (String(spelled[..<$0]), String(spelled[spelled.index(after: $0)...])) }
            ?? (spelled, "")
        for item in query.split(separator: "&") {
            if item.hasPrefix("cost=") {
                guard let v = UInt64(item.dropFirst("cost=".count)), v <= VarInt.max else {
                    throw .invalidURL("\(text): cost must be a whole number below 2^62 (got '\(item.dropFirst(5))')")
                }
                cost = v
            } else {
                kept.append(item)
            }
        }
        let url = try MoqURL(kept.isEmpty ? head : "\(head)?\(kept.joined(separator: "&"))")
        self.init(url: url, cost: cost, tls: tls, token: token)
    }
}

// SPDX-License-Identifier: MIT
public import SwiftMoQ

/// A playback URI (`playbin3 uri=moql://…`) split into the connection URL, the
/// broadcast (or prefix) and property settings.
///
/// The connection path and the broadcast path share the URI's path; they are told apart so:
/// - `?broadcast=room/cam` or `?prefix=room` in the query: the whole path is the connection
///   path (`moql://relay:4443/anon?broadcast=room/cam`).
/// - Otherwise the **first path segment is the connection root** (moq-relay scopes a session
///   by it: `/anon`, or the root a token grants) and **the rest is the broadcast**:
///   `moql://relay:4443/anon/room/cam` → url `moql://relay:4443/anon`, broadcast `room/cam`.
/// - A single segment is a broadcast at the root: `moql://relay:4443/cam` → url `…/`, broadcast `cam`.
///
/// Query keys naming element properties (`latency`, `latency-mode`, `catch-up`, `video-track`, `audio-track`, `timeout`,
/// `tls-fingerprint`, `tls-disable-verify`) set them; every other key (such as `jwt`)
/// stays in the connection URL. Values are percent-decoded.
public struct PlaybackURI: Sendable, Equatable {
    /// The schemes the source handles.
    public static let schemes = ["moql", "moqt"]
    /// Query keys that are element properties rather than part of the connection.
    public static let propertyKeys: Set<String> = [
        "latency", "latency-mode", "catch-up", "video-track", "audio-track", "timeout", "tls-fingerprint",
        "tls-disable-verify",
    ]

    /// The relay URL to connect to.
    public var url: String
    /// The exact broadcast, when given.
    public var broadcast: String?
    /// The prefix to discover, when given.
    public var prefix: String?
    /// Property settings from the query, in order.
    public var properties: [(String, String)]

    /// Splits `uri`.
    public init(_ uri: String) throws(MoqError) {
        let parsed = try MoqURL(uri)
        var kept: [String] = []
        var properties: [(String, String)] = []
        var broadcast: String?
        var prefix: String?
        for pair in (parsed.query ?? "").split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let key = String(parts[0])
            let value = PercentEncoding.decode(parts.count > 1 ? String(parts[1]) : "")
            switch key {
            case "broadcast": broadcast = value
            case "prefix": prefix = value
            case _ where Self.propertyKeys.contains(key): properties.append((key, value))
            default: kept.append(String(pair))
            }
        }
        var connectionPath = parsed.path
        if broadcast == nil && prefix == nil {
            let segments = parsed.path.split(separator: "/", omittingEmptySubsequences: true)
            guard !segments.isEmpty else {
                throw .invalidURL(
                    "'\(uri)' names no broadcast: use moql://host:port/<root>/<broadcast> or add ?broadcast=<path>")
            }
            if segments.count == 1 {
                connectionPath = "/"
                broadcast = PercentEncoding.decode(String(segments[0]))
            } else {
                connectionPath = "/" + segments[0]
                broadcast = PercentEncoding.decode(segments.dropFirst().joined(separator: "/"))
            }
        }
        let host = parsed.host.contains(":") ? "[\(parsed.host)]" : parsed.host
        url =
            "\(parsed.scheme)://\(host):\(parsed.port)\(connectionPath)"
            + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        self.broadcast = broadcast
        self.prefix = prefix
        self.properties = properties
    }

    /// The URI for a source configured with `url` and `broadcast` or `prefix` (the explicit form,
    /// which parses back to the same settings).
    public static func compose(url: String, broadcast: String?, prefix: String?) -> String? {
        guard let parsed = try? MoqURL(url) else { return nil }
        let host = parsed.host.contains(":") ? "[\(parsed.host)]" : parsed.host
        var query = parsed.query.map { [$0] } ?? []
        if let broadcast { query.append("broadcast=\(PercentEncoding.encode(broadcast))") }
        if let prefix { query.append("prefix=\(PercentEncoding.encode(prefix))") }
        return "\(parsed.scheme)://\(host):\(parsed.port)\(parsed.path)"
            + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    public static func == (lhs: PlaybackURI, rhs: PlaybackURI) -> Bool {
        lhs.url == rhs.url && lhs.broadcast == rhs.broadcast && lhs.prefix == rhs.prefix
            && lhs.properties.elementsEqual(rhs.properties, by: { $0 == $1 })
    }
}

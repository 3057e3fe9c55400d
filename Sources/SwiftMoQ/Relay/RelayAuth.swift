// SPDX-License-Identifier: MIT
public import FoundationEssentials
import MoqQUIC
import MoqSession
import MoqWire

/// What a session may do on a relay: its root, and the prefixes (relative to the
/// root) it may subscribe to and publish under. moq-relay's model.
public struct RelayPermissions: Sendable, Equatable {
    /// The session's root (its connection path), normalised.
    public var root: String
    /// Prefixes it may see and subscribe to (`""` = everything under the root).
    public var subscribe: [String]
    /// Prefixes it may announce broadcasts under.
    public var publish: [String]
    /// When the token that granted this expires (the relay closes the session then); nil for
    /// public prefixes and tokens without `exp`.
    public var expires: Date?
    /// Granted to another relay's peer link (the token's `peer` claim, as moq-relay's): what it
    /// announces are routes, chosen among others by cost and hops, not broadcasts it owns.
    public var peer: Bool = false

    /// Who owns what this session announces: sessions with the same grant (the same root and
    /// prefixes, e.g. a publisher reconnecting with its token, or a re-issued token) may replace
    /// each other's broadcasts; others may not take a path over.
    public var grant: String {
        "\(root)|put:\(publish.sorted().joined(separator: ","))|get:\(subscribe.sorted().joined(separator: ","))"
    }

    public init(root: String, subscribe: [String], publish: [String], expires: Date? = nil) {
        self.root = root
        self.subscribe = subscribe
        self.publish = publish
        self.expires = expires
    }

    public func canPublish(_ path: String) -> Bool { publish.contains { BroadcastPath.hasPrefix(path, $0) } }
}

/// Why a session was refused.
public struct RelayAuthError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Authorises sessions as moq-relay does: `--public` prefixes are open to anyone;
/// other roots need `?jwt=` signed (HS256) with the relay's key, whose claims are
/// `root`, `put` (publish prefixes), `get` (subscribe prefixes), `exp` (the session is closed
/// when it passes) and `nbf` (refused before it).
public struct RelayAuth: Sendable {
    /// Prefixes open without a token (both publish and subscribe).
    public var publicPrefixes: [String]
    /// The HS256 secret, if tokens are accepted.
    public var key: [UInt8]?

    public init(publicPrefixes: [String] = [], key: [UInt8]? = nil) {
        self.publicPrefixes = publicPrefixes.map(BroadcastPath.normalize)
        self.key = key
    }

    /// Loads a key file: a JWK (`{"kty":"oct","k":"<base64url>"}`, as `moq-token`
    /// writes) or, failing that, the file's bytes as the raw secret.
    public static func loadKey(file: String) throws(MoqError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw .configuration("cannot read the auth key file '\(file)'")
        }
        let trimmed = [UInt8](data).drop { $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }
        if trimmed.first == UInt8(ascii: "{") {
            guard let jwk = try? JSONDecoder().decode(JWK.self, from: data), jwk.kty == "oct", let k = jwk.k,
                let secret = Base64URL.decode(k), !secret.isEmpty
            else {
                throw .configuration(
                    "auth key file '\(file)': expected a JWK with \"kty\":\"oct\" and a base64url \"k\"")
            }
            if let alg = jwk.alg, alg != "HS256" {
                throw .configuration("auth key file '\(file)': algorithm \(alg) is not supported (HS256 only)")
            }
            return secret
        }
        let raw = [UInt8](data).reversed().drop { $0 == 0x0a || $0 == 0x0d || $0 == 0x20 }.reversed()
        guard !raw.isEmpty else { throw .configuration("auth key file '\(file)' is empty") }
        return Array(raw)
    }

    /// A JSON Web Key (the fields used here).
    struct JWK: Decodable {
        var kty: String?
        var k: String?
        var alg: String?
    }

    /// The permissions of a session that asked for `setupPath` (path, then `?query`).
    public func authorize(setupPath: String?, now: Date = Date()) -> Result<RelayPermissions, RelayAuthError> {
        let full = setupPath ?? ""
        let path: String
        var jwt: String?
        if let q = full.firstIndex(of: "?") {
            path = String(full[..<q])
            for pair in full[full.index(after: q)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == "jwt", !parts[1].isEmpty {
                    jwt = PercentEncoding.decode(String(parts[1]))
                }
            }
        } else {
            path = full
        }
        let root = BroadcastPath.normalize(path)
        if let jwt {
            guard let key else { return .failure(RelayAuthError("this relay does not accept tokens")) }
            switch JWT.verifyHS256(jwt, key: key, now: now) {
            case .failure(let e): return .failure(e)
            case .success(let claims): return Self.finalize(root: root, claims: claims)
            }
        }
        let overlaps = publicPrefixes.contains {
            BroadcastPath.hasPrefix(root, $0) || BroadcastPath.hasPrefix($0, root)
        }
        guard overlaps else {
            return .failure(RelayAuthError("'/\(root)' is not public: a token (?jwt=) is required"))
        }
        return Self.finalize(
            root: root, claims: JWT.Claims(root: "", publish: publicPrefixes, subscribe: publicPrefixes))
    }

    /// Re-bases the claims' prefixes onto the connection root (the two must overlap)
    /// and drops those outside it.
    static func finalize(root: String, claims: JWT.Claims) -> Result<RelayPermissions, RelayAuthError> {
        let claimsRoot = BroadcastPath.normalize(claims.root)
        let suffix: String
        let prefix: String
        if let s = BroadcastPath.strip(prefix: claimsRoot, from: root) {
            (suffix, prefix) = (s, "")
        } else if let p = BroadcastPath.strip(prefix: root, from: claimsRoot) {
            (suffix, prefix) = ("", p)
        } else {
            return .failure(RelayAuthError("the token's root '\(claimsRoot)' does not match the path '/\(root)'"))
        }
        func scope(_ paths: [String]) -> [String] {
            paths.compactMap { p in
                let joined = BroadcastPath.join(prefix, p)
                if joined.isEmpty { return "" }
                if let remaining = BroadcastPath.strip(prefix: suffix, from: joined) { return remaining }
                if BroadcastPath.hasPrefix(suffix, joined) { return "" }
                return nil
            }
        }
        var permissions = RelayPermissions(
            root: root, subscribe: scope(claims.subscribe), publish: scope(claims.publish), expires: claims.expires)
        permissions.peer = claims.peer
        guard !permissions.subscribe.isEmpty || !permissions.publish.isEmpty else {
            return .failure(RelayAuthError("the token grants nothing under '/\(root)'"))
        }
        return .success(permissions)
    }
}

/// Compact JWS with HS256, as moq-token issues them.
public enum JWT {
    /// The claims moq-relay reads.
    public struct Claims: Sendable, Equatable {
        public var root: String
        public var publish: [String]
        public var subscribe: [String]
        public var expires: Date?
        /// Not valid before this (`nbf`).
        public var notBefore: Date?
        /// A relay's peer link (`peer`).
        public var peer: Bool

        public init(
            root: String, publish: [String], subscribe: [String], expires: Date? = nil, notBefore: Date? = nil,
            peer: Bool = false
        ) {
            self.root = root
            self.publish = publish
            self.subscribe = subscribe
            self.expires = expires
            self.notBefore = notBefore
            self.peer = peer
        }
    }

    /// The claims as encoded in a token.
    struct WireClaims: Codable {
        var root: String?
        var put: StringList?
        var get: StringList?
        var exp: Double?
        var nbf: Double?
        var peer: Bool?
    }

    /// moq-token writes a list as a string when it has one entry.
    enum StringList: Codable {
        case one(String)
        case many([String])

        var values: [String] {
            switch self {
            case .one(let s): [s]
            case .many(let l): l
            }
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .one(s) } else { self = .many(try c.decode([String].self)) }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .one(let s): try c.encode(s)
            case .many(let l): try c.encode(l)
            }
        }
    }

    struct Header: Decodable { var alg: String? }

    /// Signs claims (for tests and tooling).
    public static func signHS256(_ claims: Claims, key: [UInt8]) -> String {
        let wire = WireClaims(
            root: claims.root, put: .many(claims.publish), get: .many(claims.subscribe),
            exp: claims.expires.map { ($0.timeIntervalSince1970).rounded(.down) },
            nbf: claims.notBefore.map { ($0.timeIntervalSince1970).rounded(.down) }, peer: claims.peer ? true : nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode([UInt8]((try? encoder.encode(wire)) ?? Data()))
        let signature = Crypto.hmacSHA256(key: key, data: Array("\(header).\(body)".utf8))
        return "\(header).\(body).\(Base64URL.encode(signature))"
    }

    /// Verifies the signature and expiry and returns the claims.
    public static func verifyHS256(_ token: String, key: [UInt8], now: Date = Date()) -> Result<Claims, RelayAuthError>
    {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = Base64URL.decode(String(parts[2])) else {
            return .failure(RelayAuthError("the token is not a valid JWT"))
        }
        // The signature first: nothing a stranger wrote is parsed as JSON.
        let expected = Crypto.hmacSHA256(key: key, data: Array("\(parts[0]).\(parts[1])".utf8))
        guard Crypto.constantTimeEqual(expected, signature) else {
            return .failure(RelayAuthError("the token's signature is invalid"))
        }
        guard let headerBytes = Base64URL.decode(String(parts[0])),
            let payloadBytes = Base64URL.decode(String(parts[1])),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            let payload = try? JSONDecoder().decode(WireClaims.self, from: Data(payloadBytes))
        else { return .failure(RelayAuthError("the token is not a valid JWT")) }
        guard header.alg == "HS256" else {
            return .failure(RelayAuthError("the token's algorithm is not HS256"))
        }
        var expires: Date?
        if let exp = payload.exp {
            let date = Date(timeIntervalSince1970: exp)
            guard date > now else { return .failure(RelayAuthError("the token expired")) }
            expires = date
        }
        var notBefore: Date?
        if let nbf = payload.nbf {
            let date = Date(timeIntervalSince1970: nbf)
            guard date <= now else { return .failure(RelayAuthError("the token is not valid yet (nbf)")) }
            notBefore = date
        }
        return .success(
            Claims(
                root: payload.root ?? "", publish: payload.put?.values ?? [], subscribe: payload.get?.values ?? [],
                expires: expires, notBefore: notBefore, peer: payload.peer ?? false))
    }
}

/// Base64 with the URL alphabet and no padding (RFC 7515 §2).
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        var s = text.replacing("-", with: "+").replacing("_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { [UInt8]($0) }
    }
}

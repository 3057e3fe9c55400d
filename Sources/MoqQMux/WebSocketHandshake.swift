// SPDX-License-Identifier: MIT

/// The HTTP/1.1 upgrade that starts qmux over WebSocket (RFC 6455 §4; moq-dev's binding: the
/// subprotocol names the qmux version and the moq ALPN, e.g. `qmux-01.moq-lite-06`).
public enum WebSocketHandshake {
    /// The subprotocols spoken, preferred first: qmux-01 (what moq-relay selects) with moq-lite-06.
    public static let protocols = ["qmux-01.moq-lite-06"]
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's key.
    public static func acceptValue(key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + guid).utf8)))
    }

    /// What an upgrade request asks for, once checked.
    public struct Upgrade: Sendable, Equatable {
        /// The client's `Sec-WebSocket-Key`.
        public let key: String
        /// The subprotocol chosen from the client's offer.
        public let selectedProtocol: String
    }

    /// Checks an upgrade request's headers (names lowercased); the failure is the HTTP status and a
    /// body that says what to fix (400 for a request that is not a qmux upgrade, 426 for a
    /// WebSocket version other than 13).
    public static func check(headers: [String: String]) -> Result<Upgrade, UpgradeRefusal> {
        guard headers["upgrade"]?.lowercased() == "websocket",
            headers["connection"]?.lowercased().split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: " \t") == "upgrade"
            }) == true
        else {
            return .failure(
                UpgradeRefusal(status: 400, reason: "not a WebSocket upgrade (Upgrade: websocket expected)"))
        }
        guard headers["sec-websocket-version"] == "13" else {
            return .failure(UpgradeRefusal(status: 426, reason: "WebSocket version 13 only"))
        }
        guard let key = headers["sec-websocket-key"], Base64.decode(key)?.count == 16 else {
            return .failure(UpgradeRefusal(status: 400, reason: "Sec-WebSocket-Key is not 16 bytes of Base64"))
        }
        guard let offered = headers["sec-websocket-protocol"] else {
            return .failure(
                UpgradeRefusal(
                    status: 400,
                    reason: "no Sec-WebSocket-Protocol: offer \(protocols.joined(separator: ", ")) (moq-lite over qmux)"
                ))
        }
        guard let chosen = choose(offered: offered) else {
            return .failure(
                UpgradeRefusal(
                    status: 400,
                    reason: "none of the offered protocols is spoken here; offer \(protocols.joined(separator: ", "))"))
        }
        return .success(Upgrade(key: key, selectedProtocol: chosen))
    }

    /// The first of ours the client offered (the server's preference decides, as moq-relay's).
    public static func choose(offered: String) -> String? {
        let list = offered.split(separator: ",").map { $0.trimmingCharacters(in: " \t") }
        return protocols.first { list.contains($0) }
    }

    /// The 101 answer to an accepted upgrade.
    public static func response(_ upgrade: Upgrade) -> [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(acceptValue(key: upgrade.key))\r\n"
                + "Sec-WebSocket-Protocol: \(upgrade.selectedProtocol)\r\n\r\n").utf8)
    }

    /// The request a client sends: `target` is the path and query (the session's scope and token).
    public static func request(host: String, target: String, key: String) -> [UInt8] {
        Array(
            ("GET \(target) HTTP/1.1\r\nHost: \(host)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(key)\r\n"
                + "Sec-WebSocket-Protocol: \(protocols.joined(separator: ", "))\r\n\r\n").utf8)
    }

    /// A fresh `Sec-WebSocket-Key` from 16 random bytes.
    public static func makeKey(using random: inout some RandomNumberGenerator) -> String {
        Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    /// Checks the server's answer (status line and headers, names lowercased) to a request with `key`.
    public static func checkResponse(status: Int, headers: [String: String], key: String) -> Result<
        String, UpgradeRefusal
    > {
        guard status == 101 else {
            return .failure(UpgradeRefusal(status: status, reason: "the server answered HTTP \(status), not 101"))
        }
        guard headers["sec-websocket-accept"] == acceptValue(key: key) else {
            return .failure(UpgradeRefusal(status: status, reason: "wrong Sec-WebSocket-Accept"))
        }
        guard let chosen = headers["sec-websocket-protocol"], protocols.contains(chosen) else {
            return .failure(
                UpgradeRefusal(status: status, reason: "the server chose no protocol we offered (qmux-01.moq-lite-06)"))
        }
        return .success(chosen)
    }

    /// A server's answer to the upgrade request, as far as it arrived.
    public enum ResponseHead: Sendable, Equatable {
        /// More bytes are needed.
        case incomplete
        /// Not an HTTP/1.1 response head (or one over 8 KiB).
        case invalid
        /// The status, the headers (names lowercased) and where the head ends (qmux records follow).
        case complete(status: Int, headers: [String: String], length: Int)
    }

    /// The largest response head read.
    public static let maxResponseHead = 8 * 1024

    /// Reads the response head at the start of `bytes`.
    public static func parseResponse(_ bytes: [UInt8]) -> ResponseHead {
        let crlf2: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: crlf2) }) else {
            return bytes.count > maxResponseHead ? .invalid : .incomplete
        }
        guard end <= maxResponseHead else { return .invalid }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).split(
            separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            return .invalid
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard headers.count < 64, let colon = line.firstIndex(of: ":") else { return .invalid }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
        }
        return .complete(status: status, headers: headers, length: end + 4)
    }

    /// Why an upgrade was refused.
    public struct UpgradeRefusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let status: Int
        public let reason: String
        public var description: String { "HTTP \(status): \(reason)" }
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self[...]
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return String(s)
    }
}

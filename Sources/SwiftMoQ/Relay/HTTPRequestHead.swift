// SPDX-License-Identifier: MIT

/// The request line and headers of an HTTP/1.1 request, read with bounds: what the relay's small
/// TCP endpoint (`/certificate.sha256`, `/announced`, `/health`) needs, and nothing a hostile
/// client can grow.
struct HTTPRequestHead: Equatable {
    var method: String
    /// The path, percent-decoded, without the query.
    var path: String
    /// The query parameters, percent-decoded (the last of a repeated name wins).
    var query: [String: String]
    /// Header names lowercased.
    var headers: [String: String]
    /// The request target as sent (path and query, not decoded): a WebSocket session's scope and token.
    var target: String = ""

    /// The largest request head accepted.
    static let maxBytes = 8 * 1024
    static let maxHeaders = 64

    enum ParseResult: Equatable {
        /// More bytes are needed.
        case incomplete
        /// A complete head.
        case request(HTTPRequestHead)
        /// Not a request this endpoint reads (the status to answer with).
        case invalid(status: Int)
    }

    /// Parses the head at the start of `bytes` (it ends with an empty line).
    static func parse(_ bytes: [UInt8]) -> ParseResult {
        guard let end = headEnd(bytes) else { return bytes.count > maxBytes ? .invalid(status: 431) : .incomplete }
        guard end <= maxBytes else { return .invalid(status: 431) }
        let text = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        guard let requestLine = lines.popFirst() else { return .invalid(status: 400) }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), !parts[0].isEmpty, parts[1].hasPrefix("/") else {
            return .invalid(status: 400)
        }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard headers.count < maxHeaders, let colon = line.firstIndex(of: ":") else { return .invalid(status: 400) }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            headers[name] = value
        }
        let target = parts[1]
        let rawPath: Substring
        var query: [String: String] = [:]
        if let q = target.firstIndex(of: "?") {
            rawPath = target[..<q]
            for pair in target[target.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[PercentEncoding.decode(String(kv[0]), plusIsSpace: true)] =
                    kv.count > 1 ? PercentEncoding.decode(String(kv[1]), plusIsSpace: true) : ""
            }
        } else {
            rawPath = target
        }
        return .request(
            HTTPRequestHead(
                method: String(parts[0]), path: PercentEncoding.decode(String(rawPath)), query: query, headers: headers,
                target: String(target))
        )
    }

    /// The index just past the blank line that ends the head.
    /// Where the head ends: just after its empty line (`CRLF CRLF`); nil before it arrived.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var s = self[...]
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}

/// A response of the relay's HTTP endpoint.
struct HTTPResponse: Equatable {
    var status: Int
    /// The body's bytes (text is UTF-8).
    var bytes: [UInt8]
    var contentType: String
    /// More header fields (written sorted by name).
    var headers: [String: String] = [:]

    /// A text answer.
    init(status: Int, body: String, contentType: String = "text/plain; charset=utf-8") {
        self.status = status
        self.bytes = Array(body.utf8)
        self.contentType = contentType
    }

    /// A binary answer (a fetched group's frames).
    init(status: Int, bytes: [UInt8], contentType: String = "application/octet-stream") {
        self.status = status
        self.bytes = bytes
        self.contentType = contentType
    }

    /// The body as text.
    var body: String { String(decoding: bytes, as: UTF8.self) }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 413: "Content Too Large"
        case 408: "Request Timeout"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }

    /// The bytes on the wire (the connection closes after it; browsers may read it cross-origin).
    func encoded(includeBody: Bool = true) -> [UInt8] {
        let body = bytes
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        head += "Access-Control-Allow-Origin: *\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + (includeBody ? body : [])
    }
}

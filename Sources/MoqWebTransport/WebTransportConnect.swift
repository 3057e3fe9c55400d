// SPDX-License-Identifier: MIT

/// The extended CONNECT (RFC 9220) that opens a WebTransport session, and its answer, as moq-dev's
/// implementation and browsers send them: `:protocol webtransport`, the path (with `?jwt=`) in
/// `:path`, the application protocols offered in `wt-available-protocols` and the one chosen in
/// `wt-protocol` (RFC 8941 lists of strings).
public enum WebTransportConnect {
    /// A CONNECT as the server reads it.
    public struct Request: Sendable, Equatable {
        public var authority: String
        /// The path and query, e.g. `/anon/room?jwt=…`.
        public var path: String
        /// The application protocols the client offers, in its order of preference.
        public var protocols: [String]
        /// The `origin` header (browsers send one).
        public var origin: String?

        public init(authority: String, path: String, protocols: [String] = [], origin: String? = nil) {
            self.authority = authority
            self.path = path
            self.protocols = protocols
            self.origin = origin
        }

        /// The request's fields, pseudo-headers first.
        public var fields: [HTTPField] {
            var fields = [
                HTTPField(":method", "CONNECT"), HTTPField(":protocol", "webtransport"), HTTPField(":scheme", "https"),
                HTTPField(":authority", authority), HTTPField(":path", path.hasPrefix("/") ? path : "/" + path),
            ]
            if !protocols.isEmpty {
                fields.append(HTTPField("wt-available-protocols", StructuredList.encode(protocols)))
            }
            if let origin { fields.append(HTTPField("origin", origin)) }
            return fields
        }

        /// Reads and checks a CONNECT; the error says what was wrong (H3_MESSAGE_ERROR).
        public init(fields: [HTTPField]) throws(HTTP3Error) {
            var pseudo: [String: String] = [:]
            var regularSeen = false
            var protocols: [String] = []
            var origin: String?
            for field in fields {
                guard field.name == field.name.lowercased() else {
                    throw Self.malformed("uppercase field name \(field.name)")
                }
                if field.name.hasPrefix(":") {
                    guard !regularSeen else { throw Self.malformed("pseudo-header \(field.name) after regular fields") }
                    guard pseudo.updateValue(field.value, forKey: field.name) == nil else {
                        throw Self.malformed("\(field.name) twice")
                    }
                } else {
                    regularSeen = true
                    switch field.name {
                    case "wt-available-protocols": protocols = StructuredList.decode(field.value)
                    case "origin": origin = field.value
                    default: break
                    }
                }
            }
            guard pseudo[":method"] == "CONNECT" else { throw Self.malformed("not a CONNECT") }
            guard pseudo[":protocol"] == "webtransport" else {
                throw Self.malformed(":protocol is \(pseudo[":protocol"] ?? "missing"), not webtransport")
            }
            guard pseudo[":scheme"] == "https" else { throw Self.malformed(":scheme must be https") }
            guard let authority = pseudo[":authority"], !authority.isEmpty else {
                throw Self.malformed("no :authority")
            }
            guard let path = pseudo[":path"], !path.isEmpty else { throw Self.malformed("no :path") }
            self.init(authority: authority, path: path, protocols: protocols, origin: origin)
        }

        private static func malformed(_ what: String) -> HTTP3Error {
            HTTP3Error(HTTP3Error.messageError, "malformed WebTransport CONNECT: \(what)")
        }
    }

    /// The server's answer.
    public struct Response: Sendable, Equatable {
        public var status: Int
        /// The application protocol chosen (`wt-protocol`), if any.
        public var selectedProtocol: String?

        public init(status: Int, selectedProtocol: String? = nil) {
            self.status = status
            self.selectedProtocol = selectedProtocol
        }

        public var fields: [HTTPField] {
            var fields = [HTTPField(":status", String(status)), HTTPField("sec-webtransport-http3-draft", "draft02")]
            if let selectedProtocol {
                fields.append(HTTPField("wt-protocol", StructuredList.encode([selectedProtocol])))
            }
            return fields
        }

        public init(fields: [HTTPField]) throws(HTTP3Error) {
            guard let status = fields.first(where: { $0.name == ":status" }).flatMap({ Int($0.value) }) else {
                throw HTTP3Error(HTTP3Error.messageError, "response without a valid :status")
            }
            self.status = status
            selectedProtocol = fields.first { $0.name == "wt-protocol" }.flatMap {
                StructuredList.decode($0.value).first
            }
        }
    }
}

/// RFC 8941 lists of strings, as `wt-available-protocols` and `wt-protocol` carry them: items are
/// sf-strings (or tokens), parameters are ignored.
enum StructuredList {
    static func encode(_ items: [String]) -> String {
        items.map { item in
            var quoted = "\""
            for c in item.unicodeScalars {
                if c == "\"" || c == "\\" { quoted.unicodeScalars.append("\\") }
                quoted.unicodeScalars.append(c)
            }
            return quoted + "\""
        }.joined(separator: ", ")
    }

    /// The list's string items; an item that cannot be read ends the list (what came before stays).
    static func decode(_ text: String) -> [String] {
        var items: [String] = []
        var chars = Array(text.unicodeScalars)[...]
        func skipSpaces() { while let c = chars.first, c == " " || c == "\t" { chars.removeFirst() } }
        while true {
            skipSpaces()
            guard let first = chars.first else { return items }
            var item = ""
            if first == "\"" {
                chars.removeFirst()
                var closed = false
                while let c = chars.popFirst() {
                    if c == "\\" {
                        guard let escaped = chars.popFirst(), escaped == "\"" || escaped == "\\" else { return items }
                        item.unicodeScalars.append(escaped)
                    } else if c == "\"" {
                        closed = true
                        break
                    } else {
                        item.unicodeScalars.append(c)
                    }
                }
                guard closed else { return items }
            } else {
                while let c = chars.first, c != ",", c != ";", c != " " {
                    item.unicodeScalars.append(chars.removeFirst())
                }
                guard !item.isEmpty else { return items }
            }
            // Parameters (";key=value") are not used.
            while let c = chars.first, c != "," { chars.removeFirst() }
            items.append(item)
            guard chars.popFirst() == "," else { return items }
        }
    }
}

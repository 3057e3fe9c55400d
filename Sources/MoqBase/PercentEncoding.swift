// SPDX-License-Identifier: MIT

/// `%XX` escapes in URLs (RFC 3986): query values, broadcast names, tokens.
public enum PercentEncoding {
    /// `%XX` sequences decoded (a malformed escape is kept as it is); with `plusIsSpace`, `+` is a
    /// space (form encoding: query strings).
    public static func decode(_ text: String, plusIsSpace: Bool = false) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) || (plusIsSpace && text.utf8.contains(UInt8(ascii: "+"))) else {
            return text
        }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = Hex.decode(String(decoding: utf8.prefix(2), as: UTF8.self))
            {
                bytes.append(value[0])
                utf8 = utf8.dropFirst(2)
            } else if plusIsSpace && byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Escapes everything but unreserved characters and `/`.
    public static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + Hex.encode([byte]).uppercased()
            }
        }
        return out
    }
}

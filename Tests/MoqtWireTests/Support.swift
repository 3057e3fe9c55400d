// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import MoqtWire
import Testing

/// Bytes from hex written with spaces, and ASCII between quotes (`"room"`), as docs/ietf writes them.
func wire(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var rest = Substring(text)
    while let c = rest.first {
        if c == "\"" {
            rest = rest.dropFirst()
            let end = rest.firstIndex(of: "\"") ?? rest.endIndex
            out += Array(rest[..<end].utf8)
            rest = rest[end...].dropFirst()
        } else if c.isHexDigit {
            let digits = rest.prefix(while: \.isHexDigit)
            out += Hex.decode(String(digits)) ?? []
            rest = rest.dropFirst(digits.count)
        } else {
            rest = rest.dropFirst()
        }
    }
    return out
}

/// Decodes one framed message of `bytes` (which must hold exactly one).
func decodeFramed(_ bytes: [UInt8], _ version: MoqtVersion) throws -> ControlMessage {
    var reader = ControlStreamReader()
    reader.append(bytes)
    let next = reader.next()
    let (type, payload) = try #require(next)
    #expect(reader.buffered == 0, "one message, no more")
    return try ControlMessage.decode(type: type, payload: payload, version: version)
}

/// Encodes and decodes `message` on `version`, expecting the same value back.
func expectRoundTrip(
    _ message: ControlMessage, _ version: MoqtVersion, sourceLocation: SourceLocation = #_sourceLocation
)
    throws
{
    let bytes = try #require(message.encoded(version: version), sourceLocation: sourceLocation)
    #expect(try decodeFramed(bytes, version) == message, sourceLocation: sourceLocation)
}

extension TrackNamespace {
    static let roomCam = TrackNamespace(path: "room/cam")
}

extension Bytes {
    init(_ string: String) { self.init(utf8: string) }
}

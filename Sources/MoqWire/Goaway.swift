// SPDX-License-Identifier: MIT

/// GOAWAY: the session is ending; reconnect to `uri` (empty: the same place).
/// Clients must send an empty URI.
public struct Goaway: WireMessage {
    /// Where to reconnect, or empty.
    public var uri: String

    public init(uri: String = "") { self.uri = uri }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> Goaway {
        Goaway(uri: try r.readString())
    }

    public func encode(body w: inout WireWriter) { w.writeString(uri) }
}

// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire

/// Setup parameter ids (the same on drafts 14 and 16; docs/ietf/moqt-wire.md §2.3).
public enum SetupParameter {
    /// The request path and query on raw QUIC (client only), e.g. `/anon?jwt=…`.
    public static let path: UInt64 = 0x01
    /// How many requests the peer may open: an exclusive bound on request ids.
    public static let maxRequestID: UInt64 = 0x02
    /// An authorization token.
    public static let authorizationToken: UInt64 = 0x03
    /// The authority (host) on raw QUIC (client only).
    public static let authority: UInt64 = 0x05
    /// The implementation's name.
    public static let implementation: UInt64 = 0x07
    /// moq-dev's SOLICIT extension: 1 asks the peer to advertise only what is subscribed for.
    public static let solicit: UInt64 = 0x40B5A
}

/// CLIENT_SETUP (`0x20`): the first message on the control stream. Draft-14 lists the versions the
/// client speaks; draft-16 has none (ALPN chose).
public struct ClientSetup: Sendable, Equatable {
    /// Draft-14's offered version codes (empty on draft-16).
    public var versions: [UInt64]
    public var parameters: KeyValuePairs

    public init(versions: [UInt64] = [], parameters: KeyValuePairs = KeyValuePairs()) {
        self.versions = versions
        self.parameters = parameters
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        if version == .draft14 {
            w.writeVarInt(UInt64(versions.count))
            for v in versions { w.writeVarInt(v) }
        }
        parameters.encode(into: &w, version: version)
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> ClientSetup {
        var versions: [UInt64] = []
        if version == .draft14 {
            let count = try r.readLength(limit: MoqtLimits.maxSetupVersions)
            for _ in 0..<count { versions.append(try r.readVarInt()) }
        }
        return ClientSetup(versions: versions, parameters: try KeyValuePairs.decode(from: &r, version: version))
    }
}

/// SERVER_SETUP (`0x21`): the answer. Draft-14 carries the selected version code.
public struct ServerSetup: Sendable, Equatable {
    /// Draft-14's selected version code (nil on draft-16).
    public var selectedVersion: UInt64?
    public var parameters: KeyValuePairs

    public init(selectedVersion: UInt64? = nil, parameters: KeyValuePairs = KeyValuePairs()) {
        self.selectedVersion = selectedVersion
        self.parameters = parameters
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        if version == .draft14 { w.writeVarInt(selectedVersion ?? version.code) }
        parameters.encode(into: &w, version: version)
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> ServerSetup {
        let selected: UInt64? = version == .draft14 ? try r.readVarInt() : nil
        return ServerSetup(selectedVersion: selected, parameters: try KeyValuePairs.decode(from: &r, version: version))
    }
}

extension KeyValuePairs {
    /// Setup parameters as SwiftMoQ sends them: the path (clients on raw QUIC), the request-id
    /// allowance and the implementation's name.
    public static func setup(path: String? = nil, maxRequestID: UInt64, implementation: String = "swiftmoq")
        -> KeyValuePairs
    {
        var pairs = KeyValuePairs()
        if let path { pairs.set(SetupParameter.path, .bytes(Bytes(utf8: path))) }
        pairs.set(SetupParameter.maxRequestID, .varint(maxRequestID))
        pairs.set(SetupParameter.implementation, .bytes(Bytes(utf8: implementation)))
        return pairs
    }
}

// SPDX-License-Identifier: MIT

/// What a session intends to do, as declared in SETUP (parameter 0x3).
public enum SessionRole: UInt64, Sendable {
    /// Publishes and subscribes.
    case both = 0
    /// Only publishes.
    case publisher = 1
    /// Only subscribes.
    case subscriber = 2
}

/// The SETUP message sent once by each side on its Setup uni stream (type 0x01), then FIN.
///
/// Parameters are `count, (id, len, value)*`; unknown ids are ignored, duplicates rejected.
public struct Setup: WireMessage {
    /// Parameter ids.
    public enum ParameterID: UInt64, Sendable {
        case probe = 0x1
        case path = 0x2
        case role = 0x3
        case cost = 0x4
        case origin = 0x5
    }

    /// Probe support: 0 none, 1 report, 2 increase. Absent means none.
    public var probe: UInt64?
    /// The request path and query (raw QUIC clients only), e.g. `/anon/room?jwt=…`.
    public var path: String?
    /// The sender's role; absent means both.
    public var role: SessionRole?
    /// Link cost; absent means 1.
    public var cost: UInt64?
    /// The sender's hop id (random, non-zero, below 2^53); 0 or absent means none.
    public var origin: UInt64?

    public init(
        probe: UInt64? = nil, path: String? = nil, role: SessionRole? = nil, cost: UInt64? = nil,
        origin: UInt64? = nil
    ) {
        self.probe = probe
        self.path = path
        self.role = role
        self.cost = cost
        self.origin = origin
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> Setup {
        let count = try r.readVarInt()
        guard count <= UInt64(WireLimits.maxSetupParameters) else {
            throw .tooMany("SETUP parameters", limit: WireLimits.maxSetupParameters)
        }
        var setup = Setup()
        var seen = Set<UInt64>()
        for _ in 0..<count {
            let id = try r.readVarInt()
            let value = try r.readLengthPrefixedBytes(limit: WireLimits.maxString)
            guard seen.insert(id).inserted else { throw .duplicate(id) }
            switch ParameterID(rawValue: id) {
            case .probe: setup.probe = try Self.varintValue(value)
            case .path:
                guard let s = value.withUnsafeBytes({ String(validating: $0, as: UTF8.self) }) else {
                    throw .invalidString
                }
                setup.path = s
            case .role:
                let raw = try Self.varintValue(value)
                guard let role = SessionRole(rawValue: raw) else { throw .invalidValue("role \(raw)") }
                setup.role = role
            case .cost: setup.cost = try Self.varintValue(value)
            case .origin: setup.origin = try Self.varintValue(value)
            case nil: break  // unknown parameters are ignored
            }
        }
        return setup
    }

    private static func varintValue(_ value: Bytes) throws(DecodeError) -> UInt64 {
        var r = WireReader(value)
        let v = try r.readVarInt()
        try r.expectEnd()
        return v
    }

    public func encode(body w: inout WireWriter) {
        var params: [(UInt64, [UInt8])] = []
        func varint(_ v: UInt64) -> [UInt8] {
            var out: [UInt8] = []
            VarInt.encode(v, into: &out)
            return out
        }
        if let probe { params.append((ParameterID.probe.rawValue, varint(probe))) }
        if let path { params.append((ParameterID.path.rawValue, Array(path.utf8))) }
        if let role { params.append((ParameterID.role.rawValue, varint(role.rawValue))) }
        if let cost { params.append((ParameterID.cost.rawValue, varint(cost))) }
        if let origin { params.append((ParameterID.origin.rawValue, varint(origin))) }
        w.writeVarInt(params.count)
        for (id, value) in params {
            w.writeVarInt(id)
            w.writeVarInt(value.count)
            w.writeBytes(value)
        }
    }
}

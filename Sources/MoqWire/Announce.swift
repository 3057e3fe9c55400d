// SPDX-License-Identifier: MIT

/// ANNOUNCE_REQUEST: the first message on an Announce stream (subscriber → publisher).
public struct AnnounceRequest: WireMessage {
    /// The broadcast path prefix of interest ("" for everything).
    public var prefix: String

    public init(prefix: String) { self.prefix = prefix }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> AnnounceRequest {
        AnnounceRequest(prefix: try r.readString())
    }

    public func encode(body w: inout WireWriter) { w.writeString(prefix) }
}

/// ANNOUNCE_OK: the publisher's first (untyped) reply on an Announce stream.
public struct AnnounceOk: WireMessage {
    /// The publisher's own hop id, the implicit last hop of every route on this stream.
    public var hopID: UInt64
    /// How many ANNOUNCE_START messages form the initial batch that follows.
    public var activeCount: UInt64

    public init(hopID: UInt64, activeCount: UInt64) {
        self.hopID = hopID
        self.activeCount = activeCount
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> AnnounceOk {
        AnnounceOk(hopID: try r.readVarInt(), activeCount: try r.readVarInt())
    }

    public func encode(body w: inout WireWriter) {
        w.writeVarInt(hopID)
        w.writeVarInt(activeCount)
    }
}

/// A route: the hop ids a broadcast traversed and its cost.
public struct AnnounceRoute: Sendable, Equatable {
    /// Hop ids, oldest first.
    public var hops: [UInt64]
    /// Cost with active subscriptions discounted.
    public var costWarm: UInt64
    /// Cost without the discount.
    public var costCold: UInt64

    public init(hops: [UInt64] = [], costWarm: UInt64 = 0, costCold: UInt64 = 0) {
        self.hops = hops
        self.costWarm = costWarm
        self.costCold = costCold
    }

    static func decode(_ r: inout WireReader) throws(DecodeError) -> AnnounceRoute {
        let count = try r.readVarInt()
        guard count <= UInt64(WireLimits.maxHops) else { throw .tooMany("hops", limit: WireLimits.maxHops) }
        var hops: [UInt64] = []
        for _ in 0..<count { hops.append(try r.readVarInt()) }
        return AnnounceRoute(hops: hops, costWarm: try r.readVarInt(), costCold: try r.readVarInt())
    }

    func encode(_ w: inout WireWriter) {
        // Never more than a peer accepts: callers drop longer routes; this keeps the newest hops.
        let sent = hops.suffix(WireLimits.maxHops)
        w.writeVarInt(sent.count)
        for h in sent { w.writeVarInt(h) }
        w.writeVarInt(costWarm)
        w.writeVarInt(costCold)
    }
}

/// The typed announcements that follow ANNOUNCE_OK (`type, size, body`).
public enum Announcement: Sendable, Equatable {
    /// Type 0: a broadcast is available at `prefix/suffix`. Takes the next announce id.
    case start(suffix: String, route: AnnounceRoute)
    /// Type 1: the broadcast with this announce id is gone.
    case end(id: UInt64)
    /// Type 2: a new route or cost for an announced broadcast.
    case update(id: UInt64, route: AnnounceRoute)
    /// A type this version does not know; skipped using its size.
    case unknown(type: UInt64)

    /// Decodes one typed announcement.
    public static func decode(from r: inout WireReader) throws(DecodeError) -> Announcement {
        var (type, body) = try TypedFrame.read(from: &r)
        let message: Announcement
        switch type {
        case 0:
            let suffix = try body.readString()
            message = .start(suffix: suffix, route: try AnnounceRoute.decode(&body))
        case 1: message = .end(id: try body.readVarInt())
        case 2:
            let id = try body.readVarInt()
            message = .update(id: id, route: try AnnounceRoute.decode(&body))
        default: return .unknown(type: type)
        }
        try body.expectEnd()
        return message
    }

    /// The typed encoding.
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        switch self {
        case .start(let suffix, let route):
            TypedFrame.write(type: 0, into: &w) {
                $0.writeString(suffix)
                route.encode(&$0)
            }
        case .end(let id):
            TypedFrame.write(type: 1, into: &w) { $0.writeVarInt(id) }
        case .update(let id, let route):
            TypedFrame.write(type: 2, into: &w) {
                $0.writeVarInt(id)
                route.encode(&$0)
            }
        case .unknown(let type):
            TypedFrame.write(type: type, into: &w) { _ in }
        }
        return w.bytes
    }
}

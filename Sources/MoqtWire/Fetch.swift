// SPDX-License-Identifier: MIT
public import MoqBase
import MoqWire

/// What a FETCH asks for (docs/ietf/moqt-wire.md §5.8).
public enum FetchKind: Sendable, Equatable {
    /// Type 1: the objects of a track from `start` to `end` (`end.object` 0: the whole of `end.group`;
    /// otherwise up to object `end.object − 1`).
    case standalone(namespace: TrackNamespace, trackName: Bytes, start: Location, end: Location)
    /// Type 2: the objects of the joined subscription's track from the start of the group `groupOffset`
    /// groups before its first one, up to where the subscription starts (a late joiner's prefix).
    case relativeJoining(subscription: UInt64, groupOffset: UInt64)
    /// Type 3: as relative joining, from the start of group `startGroup`.
    case absoluteJoining(subscription: UInt64, startGroup: UInt64)

    var typeCode: UInt64 {
        switch self {
        case .standalone: 0x1
        case .relativeJoining: 0x2
        case .absoluteJoining: 0x3
        }
    }
}

/// FETCH (`0x16`). Draft-14 writes priority and group order inline; draft-16 as parameters `0x20`
/// and `0x22`.
public struct Fetch: Sendable, Equatable {
    public var requestID: UInt64
    public var subscriberPriority: UInt8
    /// Ascending or descending (draft-14's 0 is "the publisher's").
    public var groupOrder: GroupOrder
    public var kind: FetchKind
    /// Parameters beyond priority and order.
    public var parameters: KeyValuePairs

    public init(
        requestID: UInt64, subscriberPriority: UInt8 = 128, groupOrder: GroupOrder = .ascending, kind: FetchKind,
        parameters: KeyValuePairs = KeyValuePairs()
    ) {
        self.requestID = requestID
        self.subscriberPriority = subscriberPriority
        self.groupOrder = groupOrder
        self.kind = kind
        self.parameters = parameters
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        if version == .draft14 {
            w.writeUInt8(subscriberPriority)
            w.writeUInt8(groupOrder.rawValue)
        }
        w.writeVarInt(kind.typeCode)
        switch kind {
        case .standalone(let namespace, let name, let start, let end):
            namespace.encode(into: &w)
            w.writeField(name)
            start.encode(into: &w)
            end.encode(into: &w)
        case .relativeJoining(let subscription, let value), .absoluteJoining(let subscription, let value):
            w.writeVarInt(subscription)
            w.writeVarInt(value)
        }
        var all = parameters
        if version == .draft16 {
            all.set(MessageParameter.subscriberPriority, .varint(UInt64(subscriberPriority)))
            if groupOrder != .publisher { all.set(MessageParameter.groupOrder, .varint(UInt64(groupOrder.rawValue))) }
        }
        all.encode(into: &w, version: version)
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> Fetch {
        let requestID = try r.readVarInt()
        var priority: UInt8 = 128
        var order = GroupOrder.ascending
        if version == .draft14 {
            priority = try r.readUInt8()
            order = GroupOrder(rawValue: try r.readByte("group order", in: 0...2)) ?? .ascending
        }
        let kind: FetchKind
        switch try r.readVarInt() {
        case 0x1:
            let namespace = try TrackNamespace.decode(from: &r)
            let name = try r.readTrackName(in: namespace)
            let start = try Location.decode(from: &r)
            let end = try Location.decode(from: &r)  // an end before the start is INVALID_RANGE, not malformed
            kind = .standalone(namespace: namespace, trackName: name, start: start, end: end)
        case 0x2: kind = .relativeJoining(subscription: try r.readVarInt(), groupOffset: try r.readVarInt())
        case 0x3: kind = .absoluteJoining(subscription: try r.readVarInt(), startGroup: try r.readVarInt())
        case let other: throw .invalidValue("fetch type \(other)")
        }
        var parameters = try KeyValuePairs.decode(from: &r, version: version)
        if version == .draft16 {
            let known: Set<UInt64> = [MessageParameter.subscriberPriority, MessageParameter.groupOrder]
            if let key = parameters.duplicate(among: known) { throw .duplicate(key) }
            if let p = parameters.varint(MessageParameter.subscriberPriority) {
                guard p <= 255 else { throw .invalidValue("subscriber priority \(p)") }
                priority = UInt8(p)
            }
            if let o = parameters.varint(MessageParameter.groupOrder) {
                guard (1...2).contains(o), let value = GroupOrder(rawValue: UInt8(o)) else {
                    throw .invalidValue("group order \(o)")
                }
                order = value
            }
            parameters.pairs.removeAll { known.contains($0.key) }
        }
        return Fetch(
            requestID: requestID, subscriberPriority: priority, groupOrder: order, kind: kind, parameters: parameters)
    }
}

/// FETCH_OK (`0x18`): the fetch is served; its objects follow on a fetch stream. moq-dev answers a
/// draft-16 FETCH with REQUEST_OK instead (moqt-wire.md §5.8), which the session accepts too.
public struct FetchOk: Sendable, Equatable {
    public var requestID: UInt64
    /// Draft-14 only: the order the objects come in.
    public var groupOrder: GroupOrder
    /// Whether the fetch reaches the end of the track.
    public var endOfTrack: Bool
    /// The last object the fetch covers.
    public var end: Location
    public var parameters: KeyValuePairs
    /// Draft-16's track extensions (empty on draft-14).
    public var trackExtensions: KeyValuePairs

    public init(
        requestID: UInt64, groupOrder: GroupOrder = .ascending, endOfTrack: Bool = false, end: Location,
        parameters: KeyValuePairs = KeyValuePairs(), trackExtensions: KeyValuePairs = KeyValuePairs()
    ) {
        self.requestID = requestID
        self.groupOrder = groupOrder
        self.endOfTrack = endOfTrack
        self.end = end
        self.parameters = parameters
        self.trackExtensions = trackExtensions
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        if version == .draft14 { w.writeUInt8(groupOrder == .publisher ? 1 : groupOrder.rawValue) }
        w.writeUInt8(endOfTrack ? 1 : 0)
        end.encode(into: &w)
        parameters.encode(into: &w, version: version)
        if version == .draft16 { trackExtensions.encode(into: &w, version: version, counted: false) }
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> FetchOk {
        let requestID = try r.readVarInt()
        let order = version == .draft14 ? try r.readByte("group order", in: 1...2) : 1
        let endOfTrack = try r.readByte("end of track", in: 0...1)
        let end = try Location.decode(from: &r)
        let parameters = try KeyValuePairs.decode(from: &r, version: version)
        let extensions =
            version == .draft16 ? try KeyValuePairs.decode(from: &r, version: version, counted: false) : KeyValuePairs()
        return FetchOk(
            requestID: requestID, groupOrder: GroupOrder(rawValue: order) ?? .ascending, endOfTrack: endOfTrack == 1,
            end: end, parameters: parameters, trackExtensions: extensions)
    }
}

// SPDX-License-Identifier: MIT
public import MoqBase
import MoqWire

/// The order a subscriber asks groups in (`0` is "the publisher's").
public enum GroupOrder: UInt8, Sendable {
    case publisher = 0
    case ascending = 1
    case descending = 2
}

/// Where a subscription starts and ends (docs/ietf/moqt-wire.md §5.1).
public enum SubscriptionFilter: Sendable, Equatable {
    /// From the next group on.
    case nextGroupStart
    /// From the object after the largest one (moq-dev's only filter).
    case largestObject
    /// From `start` on.
    case absoluteStart(Location)
    /// From `start` to the end of group `endGroup` (inclusive).
    case absoluteRange(Location, endGroup: UInt64)

    func encode(into w: inout WireWriter) {
        switch self {
        case .nextGroupStart: w.writeVarInt(0x1)
        case .largestObject: w.writeVarInt(0x2)
        case .absoluteStart(let start):
            w.writeVarInt(0x3)
            start.encode(into: &w)
        case .absoluteRange(let start, let end):
            w.writeVarInt(0x4)
            start.encode(into: &w)
            w.writeVarInt(end)
        }
    }

    static func decode(from r: inout WireReader) throws(DecodeError) -> SubscriptionFilter {
        switch try r.readVarInt() {
        case 0x1: return .nextGroupStart
        case 0x2: return .largestObject
        case 0x3: return .absoluteStart(try Location.decode(from: &r))
        case 0x4:
            let start = try Location.decode(from: &r)
            let end = try r.readVarInt()
            guard end >= start.group else { throw .invalidValue("a range ending at group \(end) before \(start)") }
            return .absoluteRange(start, endGroup: end)
        case let other: throw .invalidValue("filter type \(other)")
        }
    }
}

/// Message parameter ids (draft-16 moves SUBSCRIBE's fixed fields into 0x10/0x20/0x21/0x22).
public enum MessageParameter {
    public static let deliveryTimeout: UInt64 = 0x02
    public static let authorizationToken: UInt64 = 0x03
    public static let maxCacheDuration: UInt64 = 0x04
    public static let expires: UInt64 = 0x08
    public static let largestObject: UInt64 = 0x09
    public static let forward: UInt64 = 0x10
    public static let subscriberPriority: UInt64 = 0x20
    public static let subscriptionFilter: UInt64 = 0x21
    public static let groupOrder: UInt64 = 0x22
    public static let newGroupRequest: UInt64 = 0x32
}

/// FORWARD, SUBSCRIBER_PRIORITY and SUBSCRIPTION_FILTER as draft-16 parameters, which SUBSCRIBE and
/// REQUEST_UPDATE share (nil: absent).
struct SubscriptionParameters {
    static let keys: Set<UInt64> = [
        MessageParameter.forward, MessageParameter.subscriberPriority, MessageParameter.subscriptionFilter,
    ]

    var forward: Bool?
    var priority: UInt8?
    var filter: SubscriptionFilter?

    /// Sets those present in `all`.
    func write(into all: inout KeyValuePairs) {
        if let forward { all.set(MessageParameter.forward, .varint(forward ? 1 : 0)) }
        if let priority { all.set(MessageParameter.subscriberPriority, .varint(UInt64(priority))) }
        if let filter {
            var f = WireWriter()
            filter.encode(into: &f)
            all.set(MessageParameter.subscriptionFilter, .bytes(Bytes(f.bytes)))
        }
    }

    /// Reads them from `parameters` (whose duplicates the caller refused).
    ///
    /// - Throws: ``DecodeError/invalidValue(_:)`` for a forward past 1, a priority past 255 or a
    ///   filter that does not decode exactly.
    static func read(_ parameters: KeyValuePairs) throws(DecodeError) -> SubscriptionParameters {
        var read = SubscriptionParameters()
        if let forward = parameters.varint(MessageParameter.forward) {
            guard forward <= 1 else { throw .invalidValue("forward \(forward)") }
            read.forward = forward == 1
        }
        if let priority = parameters.varint(MessageParameter.subscriberPriority) {
            guard priority <= 255 else { throw .invalidValue("subscriber priority \(priority)") }
            read.priority = UInt8(priority)
        }
        if let raw = parameters.bytes(MessageParameter.subscriptionFilter) {
            var f = WireReader(raw)
            read.filter = try SubscriptionFilter.decode(from: &f)
            try f.expectEnd()
        }
        return read
    }
}

/// SUBSCRIBE (`0x03`). The same fields on both drafts; draft-14 writes priority, order, forward and
/// filter inline, draft-16 as parameters (moq-dev refuses any other SUBSCRIBE parameter on 16).
public struct Subscribe: Sendable, Equatable {
    public var requestID: UInt64
    public var namespace: TrackNamespace
    public var trackName: Bytes
    /// Lower is more urgent.
    public var subscriberPriority: UInt8
    public var groupOrder: GroupOrder
    /// Whether objects are to be sent (moq-dev refuses 0).
    public var forward: Bool
    public var filter: SubscriptionFilter
    /// Parameters beyond the four above (draft-14: all of them).
    public var parameters: KeyValuePairs

    public init(
        requestID: UInt64, namespace: TrackNamespace, trackName: Bytes, subscriberPriority: UInt8 = 128,
        groupOrder: GroupOrder = .descending, forward: Bool = true, filter: SubscriptionFilter = .largestObject,
        parameters: KeyValuePairs = KeyValuePairs()
    ) {
        self.requestID = requestID
        self.namespace = namespace
        self.trackName = trackName
        self.subscriberPriority = subscriberPriority
        self.groupOrder = groupOrder
        self.forward = forward
        self.filter = filter
        self.parameters = parameters
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        namespace.encode(into: &w)
        w.writeField(trackName)
        switch version {
        case .draft14:
            w.writeUInt8(subscriberPriority)
            w.writeUInt8(groupOrder.rawValue)
            w.writeUInt8(forward ? 1 : 0)
            filter.encode(into: &w)
            parameters.encode(into: &w, version: version)
        case .draft16:
            var all = parameters
            SubscriptionParameters(forward: forward, priority: subscriberPriority, filter: filter).write(into: &all)
            all.set(MessageParameter.groupOrder, .varint(UInt64(groupOrder.rawValue)))
            all.encode(into: &w, version: version)
        }
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> Subscribe {
        let requestID = try r.readVarInt()
        let namespace = try TrackNamespace.decode(from: &r)
        let name = try r.readTrackName(in: namespace)
        switch version {
        case .draft14:
            let priority = try r.readUInt8()
            let order = try r.readByte("group order", in: 0...2)
            let forward = try r.readByte("forward", in: 0...1)
            let filter = try SubscriptionFilter.decode(from: &r)
            return Subscribe(
                requestID: requestID, namespace: namespace, trackName: name, subscriberPriority: priority,
                groupOrder: GroupOrder(rawValue: order) ?? .publisher, forward: forward == 1, filter: filter,
                parameters: try KeyValuePairs.decode(from: &r, version: version))
        case .draft16:
            var parameters = try KeyValuePairs.decode(from: &r, version: version)
            let known = SubscriptionParameters.keys.union([MessageParameter.groupOrder])
            if let key = parameters.duplicate(among: known) { throw .duplicate(key) }
            let read = try SubscriptionParameters.read(parameters)
            var s = Subscribe(requestID: requestID, namespace: namespace, trackName: name)
            s.forward = read.forward ?? s.forward
            s.subscriberPriority = read.priority ?? s.subscriberPriority
            s.filter = read.filter ?? s.filter
            if let order = parameters.varint(MessageParameter.groupOrder) {
                guard let o = GroupOrder(rawValue: UInt8(clamping: order)), o != .publisher, order <= 2 else {
                    throw .invalidValue("group order \(order)")
                }
                s.groupOrder = o
            }
            parameters.pairs.removeAll { known.contains($0.key) }
            s.parameters = parameters
            return s
        }
    }
}

/// SUBSCRIBE_OK (`0x04`). Draft-14 writes expiry, group order and the largest location inline;
/// draft-16 as parameters, followed by track extensions up to the end of the message.
public struct SubscribeOk: Sendable, Equatable {
    public var requestID: UInt64
    /// The alias the publisher's data streams carry for this track.
    public var trackAlias: UInt64
    /// Milliseconds until the subscription expires; 0 never (moq-dev refuses anything else on 14).
    public var expiresMs: UInt64
    /// The order the publisher sends groups in (1 or 2): inline on draft-14, the
    /// DEFAULT_PUBLISHER_GROUP_ORDER track extension on draft-16 (ascending when absent).
    public var groupOrder: GroupOrder
    /// The largest object published so far, when there is content.
    public var largest: Location?
    /// Parameters beyond those above.
    public var parameters: KeyValuePairs
    /// Draft-16's track extensions (empty on draft-14).
    public var trackExtensions: KeyValuePairs

    public init(
        requestID: UInt64, trackAlias: UInt64, expiresMs: UInt64 = 0, groupOrder: GroupOrder = .descending,
        largest: Location? = nil, parameters: KeyValuePairs = KeyValuePairs(),
        trackExtensions: KeyValuePairs = KeyValuePairs()
    ) {
        self.requestID = requestID
        self.trackAlias = trackAlias
        self.expiresMs = expiresMs
        self.groupOrder = groupOrder
        self.largest = largest
        self.parameters = parameters
        self.trackExtensions = trackExtensions
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        w.writeVarInt(trackAlias)
        switch version {
        case .draft14:
            w.writeVarInt(expiresMs)
            w.writeUInt8(groupOrder == .publisher ? GroupOrder.descending.rawValue : groupOrder.rawValue)
            if let largest {
                w.writeUInt8(1)
                largest.encode(into: &w)
            } else {
                w.writeUInt8(0)
            }
            parameters.encode(into: &w, version: version)
        case .draft16:
            var all = parameters
            if expiresMs != 0 { all.set(MessageParameter.expires, .varint(expiresMs)) }
            if let largest {
                var l = WireWriter()
                largest.encode(into: &l)
                all.set(MessageParameter.largestObject, .bytes(Bytes(l.bytes)))
            }
            all.encode(into: &w, version: version)
            var extensions = trackExtensions
            if groupOrder != .ascending {
                extensions.set(MessageParameter.groupOrder, .varint(UInt64(GroupOrder.descending.rawValue)))
            }
            extensions.encode(into: &w, version: version, counted: false)
        }
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> SubscribeOk {
        let requestID = try r.readVarInt()
        let alias = try r.readVarInt()
        switch version {
        case .draft14:
            let expires = try r.readVarInt()
            let order = try r.readByte("group order", in: 1...2)
            let exists = try r.readByte("content exists", in: 0...1)
            let largest: Location? = exists == 1 ? try Location.decode(from: &r) : nil
            return SubscribeOk(
                requestID: requestID, trackAlias: alias, expiresMs: expires,
                groupOrder: GroupOrder(rawValue: order) ?? .descending, largest: largest,
                parameters: try KeyValuePairs.decode(from: &r, version: version))
        case .draft16:
            var parameters = try KeyValuePairs.decode(from: &r, version: version)
            let known: Set<UInt64> = [MessageParameter.expires, MessageParameter.largestObject]
            if let key = parameters.duplicate(among: known) { throw .duplicate(key) }
            var ok = SubscribeOk(requestID: requestID, trackAlias: alias)
            ok.expiresMs = parameters.varint(MessageParameter.expires) ?? 0
            if let raw = parameters.bytes(MessageParameter.largestObject) {
                var l = WireReader(raw)
                ok.largest = try Location.decode(from: &l)
                try l.expectEnd()
            }
            parameters.pairs.removeAll { known.contains($0.key) }
            ok.parameters = parameters
            var extensions = try KeyValuePairs.decode(from: &r, version: version, counted: false)
            if let key = extensions.duplicate(among: [MessageParameter.groupOrder]) { throw .duplicate(key) }
            // DEFAULT_PUBLISHER_GROUP_ORDER; ascending when absent.
            ok.groupOrder = .ascending
            if let order = extensions.varint(MessageParameter.groupOrder) {
                guard order == 1 || order == 2 else { throw .invalidValue("group order \(order)") }
                ok.groupOrder = order == 1 ? .ascending : .descending
            }
            extensions.pairs.removeAll { $0.key == MessageParameter.groupOrder }
            ok.trackExtensions = extensions
            return ok
        }
    }
}

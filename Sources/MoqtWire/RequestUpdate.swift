// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire

/// SUBSCRIBE_UPDATE (draft-14) / REQUEST_UPDATE (draft-16), type `0x02` (docs/ietf/moqt-wire.md §5.4):
/// changes a subscription's priority, forwarding or range. It takes a request id of its own.
///
/// - Draft-14: `request id | subscription request id | start location | end group (+1, 0 = open) |
///   subscriber priority (8) | forward (8) | parameters`, no answer. Every field is present, so a
///   decoded draft-14 update always has a priority, a forward flag and a range.
/// - Draft-16: `request id | existing request id | parameters`, answered REQUEST_OK or REQUEST_ERROR;
///   FORWARD `0x10`, SUBSCRIBER_PRIORITY `0x20` and SUBSCRIPTION_FILTER `0x21` are read here, the
///   rest kept in ``parameters``. A field left nil is not sent, and the publisher keeps it.
///
/// On draft-14 a nil field is still written (see ``encode(into:version:)``): give such an update the
/// subscription's priority, forwarding and an absolute filter holding its start.
public struct RequestUpdate: Sendable, Equatable {
    public var requestID: UInt64
    /// The subscription this changes.
    public var existingRequestID: UInt64
    /// Lower is more urgent.
    public var subscriberPriority: UInt8?
    public var forward: Bool?
    /// The new range: draft-14's start and end as ``SubscriptionFilter/absoluteStart(_:)`` or
    /// ``SubscriptionFilter/absoluteRange(_:endGroup:)``; on draft-16 any filter.
    public var filter: SubscriptionFilter?
    /// Parameters beyond those above.
    public var parameters: KeyValuePairs

    public init(
        requestID: UInt64, existingRequestID: UInt64, subscriberPriority: UInt8? = nil, forward: Bool? = nil,
        filter: SubscriptionFilter? = nil, parameters: KeyValuePairs = KeyValuePairs()
    ) {
        self.requestID = requestID
        self.existingRequestID = existingRequestID
        self.subscriberPriority = subscriberPriority
        self.forward = forward
        self.filter = filter
        self.parameters = parameters
    }

    /// Draft-14 cannot leave a field out: a nil priority is written as 128 (the default), a nil forward
    /// as 1, and a range that is not absolute as start (0, 0), open — a start below the subscription's
    /// is a decrease, which a publisher may close the session for.
    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        w.writeVarInt(existingRequestID)
        switch version {
        case .draft14:
            let (start, end): (Location, UInt64?) =
                switch filter {
                case .absoluteStart(let s): (s, nil)
                case .absoluteRange(let s, let e): (s, e)
                default: (Location(group: 0, object: 0), nil)
                }
            start.encode(into: &w)
            w.writeVarInt(end.map { VarInt.saturatingAdd($0, 1) } ?? 0)
            w.writeUInt8(subscriberPriority ?? 128)
            w.writeUInt8(forward == false ? 0 : 1)
            parameters.encode(into: &w, version: version)
        case .draft16:
            var all = parameters
            SubscriptionParameters(forward: forward, priority: subscriberPriority, filter: filter).write(into: &all)
            all.encode(into: &w, version: version)
        }
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> RequestUpdate {
        let requestID = try r.readVarInt()
        let existing = try r.readVarInt()
        switch version {
        case .draft14:
            let start = try Location.decode(from: &r)
            let endPlusOne = try r.readVarInt()
            let priority = try r.readUInt8()
            let forward = try r.readByte("forward", in: 0...1)
            var filter = SubscriptionFilter.absoluteStart(start)
            if endPlusOne > 0 {
                guard endPlusOne - 1 >= start.group else {
                    throw .invalidValue("an update ending at group \(endPlusOne - 1) before \(start)")
                }
                filter = .absoluteRange(start, endGroup: endPlusOne - 1)
            }
            return RequestUpdate(
                requestID: requestID, existingRequestID: existing, subscriberPriority: priority, forward: forward == 1,
                filter: filter, parameters: try KeyValuePairs.decode(from: &r, version: version))
        case .draft16:
            var parameters = try KeyValuePairs.decode(from: &r, version: version)
            if let key = parameters.duplicate(among: SubscriptionParameters.keys) { throw .duplicate(key) }
            let read = try SubscriptionParameters.read(parameters)
            parameters.pairs.removeAll { SubscriptionParameters.keys.contains($0.key) }
            return RequestUpdate(
                requestID: requestID, existingRequestID: existing, subscriberPriority: read.priority,
                forward: read.forward, filter: read.filter, parameters: parameters)
        }
    }
}

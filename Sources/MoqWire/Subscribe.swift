// SPDX-License-Identifier: MIT

/// The delivery preferences shared by SUBSCRIBE and SUBSCRIBE_UPDATE.
public struct SubscriptionRange: Sendable, Equatable, Hashable {
    /// Subscriber priority, higher first.
    public var priority: UInt8
    /// The latency budget in ms: picks the start group and expires stale groups. 0 means newest only.
    public var maxLatencyMs: UInt64
    /// The lowest group wanted (a floor, raw).
    public var groupStart: UInt64
    /// The last group wanted (inclusive), or nil for no end. Encoded +1.
    public var groupEnd: UInt64?
    /// The first frame wanted within the group `groupStart` names (raw). Every later group, and
    /// a later group the publisher resolves to, starts at frame 0 (moq-dev's rule, checked on the
    /// wire with moq-ffi 0.4.18).
    public var frameStart: UInt64
    /// The last frame wanted (inclusive) within the group `groupEnd` names, or nil for the whole
    /// group. Encoded +1. Only valid with a `groupEnd`: a publisher resets a request that sends one
    /// without it (MALFORMED_TRACK, as moq-dev does).
    public var frameEnd: UInt64?

    /// The Rust subscriber's defaults: priority 0, newest only, no bounds.
    public init(
        priority: UInt8 = 0, maxLatencyMs: UInt64 = 0, groupStart: UInt64 = 0, groupEnd: UInt64? = nil,
        frameStart: UInt64 = 0, frameEnd: UInt64? = nil
    ) {
        self.priority = priority
        self.maxLatencyMs = maxLatencyMs
        self.groupStart = groupStart
        self.groupEnd = groupEnd
        self.frameStart = frameStart
        self.frameEnd = frameEnd
    }

    /// The first frame to send of group `sequence`: `frameStart` for the start group, 0 for any other.
    public func firstFrame(of sequence: UInt64) -> UInt64 { sequence == groupStart ? frameStart : 0 }

    /// The last frame to send of group `sequence` (inclusive): `frameEnd` for the end group, nil (the
    /// whole group) for any other.
    public func lastFrame(of sequence: UInt64) -> UInt64? { sequence == groupEnd ? frameEnd : nil }

    static func decode(_ r: inout WireReader) throws(DecodeError) -> SubscriptionRange {
        let range = SubscriptionRange(
            priority: try r.readUInt8(), maxLatencyMs: try r.readVarInt(), groupStart: try r.readVarInt(),
            groupEnd: try r.readOptionalPlusOne(), frameStart: try r.readVarInt(),
            frameEnd: try r.readOptionalPlusOne())
        // A frame bound qualifies a group bound: an end frame of no end group names nothing.
        if range.frameEnd != nil && range.groupEnd == nil { throw .invalidValue("frame end without a group end") }
        return range
    }

    func encode(_ w: inout WireWriter) {
        w.writeUInt8(priority)
        w.writeVarInt(maxLatencyMs)
        w.writeVarInt(groupStart)
        w.writeOptionalPlusOne(groupEnd)
        w.writeVarInt(frameStart)
        w.writeOptionalPlusOne(frameEnd)
    }
}

/// SUBSCRIBE: the first message on a Subscribe stream (subscriber → publisher).
public struct Subscribe: WireMessage {
    /// Chosen by the subscriber; echoed in every GROUP header and datagram.
    public var id: UInt64
    /// The broadcast path.
    public var broadcast: String
    /// The track name.
    public var track: String
    /// Priority, latency budget and bounds.
    public var range: SubscriptionRange

    public init(id: UInt64, broadcast: String, track: String, range: SubscriptionRange = SubscriptionRange()) {
        self.id = id
        self.broadcast = broadcast
        self.track = track
        self.range = range
    }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> Subscribe {
        Subscribe(
            id: try r.readVarInt(), broadcast: try r.readString(), track: try r.readString(),
            range: try SubscriptionRange.decode(&r))
    }

    public func encode(body w: inout WireWriter) {
        w.writeVarInt(id)
        w.writeString(broadcast)
        w.writeString(track)
        range.encode(&w)
    }
}

/// SUBSCRIBE_UPDATE: later (untyped) messages on a Subscribe stream from the subscriber.
public struct SubscribeUpdate: WireMessage {
    /// The new preferences.
    public var range: SubscriptionRange

    public init(range: SubscriptionRange) { self.range = range }

    public static func decode(body r: inout WireReader) throws(DecodeError) -> SubscribeUpdate {
        SubscribeUpdate(range: try SubscriptionRange.decode(&r))
    }

    public func encode(body w: inout WireWriter) { range.encode(&w) }
}

/// The publisher's typed replies on a Subscribe stream.
public enum SubscribeResponse: Sendable, Equatable {
    /// Type 0: the resolved first group (plain).
    case start(group: UInt64)
    /// Type 1: the track ended; `group` is exclusive (the first group never delivered).
    case end(group: UInt64)
    /// Type 2: groups `start...end` (inclusive) will not be delivered, with the reason.
    case drop(start: UInt64, end: UInt64, code: UInt64)
    /// A type this version does not know; skipped.
    case unknown(type: UInt64)

    /// Decodes one typed reply.
    public static func decode(from r: inout WireReader) throws(DecodeError) -> SubscribeResponse {
        var (type, body) = try TypedFrame.read(from: &r)
        let message: SubscribeResponse
        switch type {
        case 0: message = .start(group: try body.readVarInt())
        case 1: message = .end(group: try body.readVarInt())
        case 2: message = .drop(start: try body.readVarInt(), end: try body.readVarInt(), code: try body.readVarInt())
        default: return .unknown(type: type)
        }
        try body.expectEnd()
        return message
    }

    /// The typed encoding.
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        switch self {
        case .start(let g): TypedFrame.write(type: 0, into: &w) { $0.writeVarInt(g) }
        case .end(let g): TypedFrame.write(type: 1, into: &w) { $0.writeVarInt(g) }
        case .drop(let s, let e, let c):
            TypedFrame.write(type: 2, into: &w) {
                $0.writeVarInt(s)
                $0.writeVarInt(e)
                $0.writeVarInt(c)
            }
        case .unknown(let type): TypedFrame.write(type: type, into: &w) { _ in }
        }
        return w.bytes
    }
}

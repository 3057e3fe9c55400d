// SPDX-License-Identifier: MIT
public import MoqBase
public import MoqWire

/// A control message of MoQ Transport draft-14 or draft-16 (docs/ietf/moqt-wire.md §4–5), framed
/// `type (varint) | length (16) | payload`.
///
/// Types whose meaning differs between the drafts (`0x05`, `0x07`, `0x08`, `0x0E`) decode by the
/// version; draft-16's NAMESPACE and NAMESPACE_DONE belong on a SUBSCRIBE_NAMESPACE stream, which the
/// session checks. Requests this codec does not model yet (PUBLISH, TRACK_STATUS and their replies)
/// decode as ``unsupported(type:requestID:)`` with their request id,
/// so that a session can refuse them; an unknown type is a ``DecodeError/unknownType(_:)``.
public enum ControlMessage: Sendable, Equatable {
    case clientSetup(ClientSetup)
    case serverSetup(ServerSetup)
    case subscribe(Subscribe)
    case subscribeOk(SubscribeOk)
    /// SUBSCRIBE_UPDATE (draft-14) / REQUEST_UPDATE (draft-16).
    case requestUpdate(RequestUpdate)
    case requestError(RequestError)
    case requestOk(RequestOk)
    case unsubscribe(requestID: UInt64)
    case publishDone(PublishDone)
    case fetch(Fetch)
    case fetchOk(FetchOk)
    case fetchCancel(requestID: UInt64)
    case publishNamespace(PublishNamespace)
    case publishNamespaceDone(NamespaceTarget)
    case publishNamespaceCancel(PublishNamespaceCancel)
    case subscribeNamespace(SubscribeNamespace)
    /// Draft-14 only: withdraws a SUBSCRIBE_NAMESPACE (by prefix; moq-dev's JS port sends a request id).
    case unsubscribeNamespace(NamespaceTarget)
    /// Draft-16, on a SUBSCRIBE_NAMESPACE stream: a namespace (suffix of the prefix) now published.
    case namespace(suffix: TrackNamespace)
    /// Draft-16, on a SUBSCRIBE_NAMESPACE stream: a namespace no longer published.
    case namespaceDone(suffix: TrackNamespace)
    case goaway(newSessionURI: String)
    /// The peer may now use request ids below this.
    case maxRequestID(UInt64)
    case requestsBlocked(maximum: UInt64)
    /// A defined message this codec does not model; `requestID` is its first field when it has one.
    case unsupported(type: UInt64, requestID: UInt64?)

    /// The wire type on `version` (nil when the message does not exist there).
    public func type(version: MoqtVersion) -> UInt64? {
        switch self {
        case .clientSetup: 0x20
        case .serverSetup: 0x21
        case .subscribe: 0x03
        case .subscribeOk: 0x04
        case .requestUpdate: 0x02
        case .requestError(let e): version == .draft16 ? 0x05 : RequestError.draft14Type(e.kind)
        case .requestOk(let ok): version == .draft16 ? 0x07 : RequestOk.draft14Type(ok.kind)
        case .unsubscribe: 0x0A
        case .publishDone: 0x0B
        case .fetch: 0x16
        case .fetchOk: 0x18
        case .fetchCancel: 0x17
        case .publishNamespace: 0x06
        case .publishNamespaceDone: 0x09
        case .publishNamespaceCancel: 0x0C
        case .subscribeNamespace: 0x11
        case .unsubscribeNamespace: version == .draft14 ? 0x14 : nil
        case .namespace: version == .draft16 ? 0x08 : nil
        case .namespaceDone: version == .draft16 ? 0x0E : nil
        case .goaway: 0x10
        case .maxRequestID: 0x15
        case .requestsBlocked: 0x1A
        case .unsupported(let type, _): type
        }
    }

    /// The framed message for `version`; nil when it does not exist on that version or its payload
    /// would pass 65,535 bytes.
    public func encoded(version: MoqtVersion) -> [UInt8]? {
        guard let type = type(version: version) else { return nil }
        var body = WireWriter()
        switch self {
        case .clientSetup(let m): m.encode(into: &body, version: version)
        case .serverSetup(let m): m.encode(into: &body, version: version)
        case .subscribe(let m): m.encode(into: &body, version: version)
        case .subscribeOk(let m): m.encode(into: &body, version: version)
        case .requestUpdate(let m): m.encode(into: &body, version: version)
        case .requestError(let m): m.encode(into: &body, version: version)
        case .requestOk(let m): m.encode(into: &body, version: version)
        case .unsubscribe(let id), .maxRequestID(let id), .requestsBlocked(let id), .fetchCancel(let id):
            body.writeVarInt(id)
        case .fetch(let m): m.encode(into: &body, version: version)
        case .fetchOk(let m): m.encode(into: &body, version: version)
        case .publishDone(let m): m.encode(into: &body)
        case .publishNamespace(let m): m.encode(into: &body, version: version)
        case .publishNamespaceDone(let target), .unsubscribeNamespace(let target): target.encode(into: &body)
        case .publishNamespaceCancel(let m): m.encode(into: &body)
        case .subscribeNamespace(let m): m.encode(into: &body, version: version)
        case .namespace(let suffix), .namespaceDone(let suffix): suffix.encode(into: &body)
        case .goaway(let uri): body.writeString(uri)
        case .unsupported(_, let id): if let id { body.writeVarInt(id) }
        }
        return ControlFraming.frame(type: type, payload: body.bytes)
    }

    /// Decodes a payload of `type`, which must be consumed exactly.
    public static func decode(type: UInt64, payload: Bytes, version: MoqtVersion) throws(DecodeError)
        -> ControlMessage
    {
        var r = WireReader(payload)
        let message = try decodeFields(type: type, from: &r, version: version)
        if case .unsupported = message { return message }  // fields not modelled: not read
        try r.expectEnd()
        return message
    }

    private static func decodeFields(type: UInt64, from r: inout WireReader, version: MoqtVersion)
        throws(DecodeError) -> ControlMessage
    {
        let d14 = version == .draft14
        switch type {
        case 0x20: return .clientSetup(try ClientSetup.decode(from: &r, version: version))
        case 0x21: return .serverSetup(try ServerSetup.decode(from: &r, version: version))
        case 0x03: return .subscribe(try Subscribe.decode(from: &r, version: version))
        case 0x04: return .subscribeOk(try SubscribeOk.decode(from: &r, version: version))
        case 0x02: return .requestUpdate(try RequestUpdate.decode(from: &r, version: version))
        case 0x05:
            return .requestError(try RequestError.decode(from: &r, kind: d14 ? .subscribe : nil, version: version))
        case 0x07:
            return .requestOk(try RequestOk.decode(from: &r, kind: d14 ? .publishNamespace : nil, version: version))
        case 0x08:
            if d14 {
                return .requestError(try RequestError.decode(from: &r, kind: .publishNamespace, version: version))
            }
            return .namespace(suffix: try TrackNamespace.decode(from: &r))
        case 0x0E:
            if d14 { return .unsupported(type: type, requestID: try r.readVarInt()) }  // TRACK_STATUS_OK
            return .namespaceDone(suffix: try TrackNamespace.decode(from: &r))
        case 0x12 where d14:
            return .requestOk(try RequestOk.decode(from: &r, kind: .subscribeNamespace, version: version))
        case 0x13 where d14:
            return .requestError(try RequestError.decode(from: &r, kind: .subscribeNamespace, version: version))
        case 0x19 where d14: return .requestError(try RequestError.decode(from: &r, kind: .fetch, version: version))
        case 0x1F where d14: return .requestError(try RequestError.decode(from: &r, kind: .publish, version: version))
        case 0x0F where d14:
            return .requestError(try RequestError.decode(from: &r, kind: .trackStatus, version: version))
        case 0x0A: return .unsubscribe(requestID: try r.readVarInt())
        case 0x0B: return .publishDone(try PublishDone.decode(from: &r))
        case 0x06: return .publishNamespace(try PublishNamespace.decode(from: &r, version: version))
        case 0x09: return .publishNamespaceDone(try NamespaceTarget.decode(from: &r, version: version))
        case 0x0C: return .publishNamespaceCancel(try PublishNamespaceCancel.decode(from: &r, version: version))
        case 0x11: return .subscribeNamespace(try SubscribeNamespace.decode(from: &r, version: version))
        case 0x14 where d14: return .unsubscribeNamespace(try unsubscribeNamespaceTarget(&r))
        case 0x10: return .goaway(newSessionURI: try r.readString(limit: MoqtLimits.maxGoawayURI))
        case 0x15: return .maxRequestID(try r.readVarInt())
        case 0x1A: return .requestsBlocked(maximum: try r.readVarInt())
        case 0x16: return .fetch(try Fetch.decode(from: &r, version: version))
        case 0x18: return .fetchOk(try FetchOk.decode(from: &r, version: version))
        case 0x17: return .fetchCancel(requestID: try r.readVarInt())
        case 0x0D, 0x1D, 0x1E:
            return .unsupported(type: type, requestID: try r.readVarInt())
        default: throw .unknownType(type)
        }
    }

    /// Draft-14 names the prefix; moq-dev's JS port sends the request id instead. A payload that is
    /// exactly a tuple is read as one, anything else as a request id.
    private static func unsubscribeNamespaceTarget(_ r: inout WireReader) throws(DecodeError) -> NamespaceTarget {
        var tuple = r
        if let ns = try? TrackNamespace.decode(from: &tuple), tuple.isAtEnd {
            r = tuple
            return .namespace(ns)
        }
        return .request(try r.readVarInt())
    }
}

/// The control stream's framing: `type (varint) | length (16, big-endian) | payload`.
public enum ControlFraming {
    /// A framed message; nil when the payload passes 65,535 bytes.
    public static func frame(type: UInt64, payload: [UInt8]) -> [UInt8]? {
        guard payload.count <= MoqtLimits.maxControlMessage else { return nil }
        var w = WireWriter(capacity: payload.count + 4)
        w.writeVarInt(type)
        w.writeUInt8(UInt8(payload.count >> 8))
        w.writeUInt8(UInt8(payload.count & 0xff))
        w.writeBytes(payload)
        return w.bytes
    }
}

/// Accumulates a control stream's bytes and yields whole messages as they complete. Holds at most
/// one incomplete message beyond what a read delivered (a length is 16 bits, so under 64 KiB), and
/// looks at a partial message's header without copying it, so drip-fed input costs O(n).
public struct ControlStreamReader: Sendable {
    private var pending: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes received and not yet decoded.
    public var buffered: Int { pending.count - start }

    /// Appends received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        if start > 0 && start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
        pending.append(contentsOf: bytes)
    }

    /// The next whole message's type and payload, or nil until one has arrived.
    public mutating func next() -> (type: UInt64, payload: Bytes)? {
        guard let (type, typeLength) = VarInt.peek(pending, at: start) else { return nil }
        let header = typeLength + 2
        guard pending.count - start >= header else { return nil }
        let length = Int(pending[start + typeLength]) << 8 | Int(pending[start + typeLength + 1])
        guard pending.count - start - header >= length else { return nil }
        let payload = Bytes(pending[(start + header)..<(start + header + length)])
        start += header + length
        return (type, payload)
    }
}

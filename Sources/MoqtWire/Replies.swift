// SPDX-License-Identifier: MIT
import MoqWire

/// Which request a reply answers: draft-14 gives each kind its own OK and ERROR types; draft-16
/// answers all with REQUEST_OK / REQUEST_ERROR, matched by request id.
public enum RequestKind: Sendable, Equatable {
    case subscribe
    case publishNamespace
    case subscribeNamespace
    case fetch
    case publish
    case trackStatus
    case requestUpdate
}

/// A request refused: SUBSCRIBE_ERROR, PUBLISH_NAMESPACE_ERROR, SUBSCRIBE_NAMESPACE_ERROR,
/// FETCH_ERROR, PUBLISH_ERROR (draft-14) or REQUEST_ERROR (draft-16, with a retry interval).
public struct RequestError: Sendable, Equatable {
    /// The kind of request refused (draft-14 encodes it in the type; nil when decoded from draft-16's
    /// REQUEST_ERROR, which the session matches by request id).
    public var kind: RequestKind?
    public var requestID: UInt64
    public var code: UInt64
    /// Draft-16: 0 do not retry, otherwise retry after `retryInterval − 1` ms.
    public var retryInterval: UInt64
    public var reason: String

    public init(kind: RequestKind?, requestID: UInt64, code: UInt64, retryInterval: UInt64 = 0, reason: String = "") {
        self.kind = kind
        self.requestID = requestID
        self.code = code
        self.retryInterval = retryInterval
        self.reason = reason
    }

    /// The draft-14 message type for `kind` (nil for kinds draft-14 answers otherwise).
    static func draft14Type(_ kind: RequestKind?) -> UInt64? {
        switch kind {
        case .subscribe: 0x05
        case .publishNamespace: 0x08
        case .subscribeNamespace: 0x13
        case .fetch: 0x19
        case .publish: 0x1F
        case .trackStatus: 0x0F
        case .requestUpdate, nil: nil
        }
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        w.writeVarInt(code)
        if version == .draft16 { w.writeVarInt(retryInterval) }
        w.writeReasonPhrase(reason)
    }

    static func decode(from r: inout WireReader, kind: RequestKind?, version: MoqtVersion) throws(DecodeError)
        -> RequestError
    {
        let id = try r.readVarInt()
        let code = try r.readVarInt()
        let retry = version == .draft16 ? try r.readVarInt() : 0
        return RequestError(
            kind: kind, requestID: id, code: code, retryInterval: retry, reason: try r.readReasonPhrase())
    }
}

/// A request accepted without a message of its own: PUBLISH_NAMESPACE_OK and SUBSCRIBE_NAMESPACE_OK
/// (draft-14: the request id only) or REQUEST_OK (draft-16: with parameters).
public struct RequestOk: Sendable, Equatable {
    /// The kind accepted (draft-14 encodes it in the type; nil when decoded from REQUEST_OK).
    public var kind: RequestKind?
    public var requestID: UInt64
    /// Draft-16 only (moq-dev refuses any).
    public var parameters: KeyValuePairs

    public init(kind: RequestKind?, requestID: UInt64, parameters: KeyValuePairs = KeyValuePairs()) {
        self.kind = kind
        self.requestID = requestID
        self.parameters = parameters
    }

    static func draft14Type(_ kind: RequestKind?) -> UInt64? {
        switch kind {
        case .publishNamespace: 0x07
        case .subscribeNamespace: 0x12
        default: nil
        }
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        if version == .draft16 { parameters.encode(into: &w, version: version) }
    }

    static func decode(from r: inout WireReader, kind: RequestKind?, version: MoqtVersion) throws(DecodeError)
        -> RequestOk
    {
        let id = try r.readVarInt()
        let parameters = version == .draft16 ? try KeyValuePairs.decode(from: &r, version: version) : KeyValuePairs()
        return RequestOk(kind: kind, requestID: id, parameters: parameters)
    }
}

/// PUBLISH_DONE (`0x0B`): the publisher ends a subscription.
public struct PublishDone: Sendable, Equatable {
    public var requestID: UInt64
    public var statusCode: UInt64
    /// How many data streams the subscription opened (2^62−1 when unknown; moq-dev always says 0).
    public var streamCount: UInt64
    public var reason: String

    public init(requestID: UInt64, statusCode: UInt64, streamCount: UInt64, reason: String = "") {
        self.requestID = requestID
        self.statusCode = statusCode
        self.streamCount = streamCount
        self.reason = reason
    }

    func encode(into w: inout WireWriter) {
        w.writeVarInt(requestID)
        w.writeVarInt(statusCode)
        w.writeVarInt(streamCount)
        w.writeReasonPhrase(reason)
    }

    static func decode(from r: inout WireReader) throws(DecodeError) -> PublishDone {
        PublishDone(
            requestID: try r.readVarInt(), statusCode: try r.readVarInt(), streamCount: try r.readVarInt(),
            reason: try r.readReasonPhrase())
    }
}

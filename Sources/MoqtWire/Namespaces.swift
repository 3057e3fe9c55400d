// SPDX-License-Identifier: MIT
import MoqWire

/// What PUBLISH_NAMESPACE_DONE / _CANCEL and UNSUBSCRIBE_NAMESPACE name: the namespace itself
/// (draft-14) or the request that opened it (draft-16). The session builds the one its version
/// uses.
public enum NamespaceTarget: Sendable, Equatable {
    case namespace(TrackNamespace)
    case request(UInt64)

    func encode(into w: inout WireWriter) {
        switch self {
        case .namespace(let ns): ns.encode(into: &w)
        case .request(let id): w.writeVarInt(id)
        }
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> NamespaceTarget {
        version == .draft14 ? .namespace(try TrackNamespace.decode(from: &r)) : .request(try r.readVarInt())
    }
}

/// PUBLISH_NAMESPACE (`0x06`, formerly ANNOUNCE): the sender publishes tracks under `namespace`.
/// moq-dev refuses any parameter here (its session ends), so SwiftMoQ sends none.
public struct PublishNamespace: Sendable, Equatable {
    public var requestID: UInt64
    public var namespace: TrackNamespace
    public var parameters: KeyValuePairs

    public init(requestID: UInt64, namespace: TrackNamespace, parameters: KeyValuePairs = KeyValuePairs()) {
        self.requestID = requestID
        self.namespace = namespace
        self.parameters = parameters
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        namespace.encode(into: &w)
        parameters.encode(into: &w, version: version)
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> PublishNamespace {
        PublishNamespace(
            requestID: try r.readVarInt(), namespace: try TrackNamespace.decode(from: &r),
            parameters: try KeyValuePairs.decode(from: &r, version: version))
    }
}

/// PUBLISH_NAMESPACE_CANCEL (`0x0C`): the receiver of a PUBLISH_NAMESPACE withdraws its interest.
public struct PublishNamespaceCancel: Sendable, Equatable {
    public var target: NamespaceTarget
    public var code: UInt64
    public var reason: String

    public init(target: NamespaceTarget, code: UInt64, reason: String = "") {
        self.target = target
        self.code = code
        self.reason = reason
    }

    func encode(into w: inout WireWriter) {
        target.encode(into: &w)
        w.writeVarInt(code)
        w.writeReasonPhrase(reason)
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> PublishNamespaceCancel {
        PublishNamespaceCancel(
            target: try NamespaceTarget.decode(from: &r, version: version), code: try r.readVarInt(),
            reason: try r.readReasonPhrase())
    }
}

/// What a draft-16 SUBSCRIBE_NAMESPACE asks to be told about.
public enum SubscribeOptions: UInt64, Sendable {
    /// PUBLISH messages for matching tracks.
    case publish = 0
    /// NAMESPACE messages for matching namespaces (moq-dev's choice).
    case namespace = 1
    /// Both.
    case both = 2
}

/// SUBSCRIBE_NAMESPACE (`0x11`): be told of namespaces under `prefix`. Draft-14 sends it on the
/// control stream; draft-16 on a bidirectional stream of its own, with options. An empty prefix
/// (everything) is accepted on both drafts, as moq-dev sends it.
public struct SubscribeNamespace: Sendable, Equatable {
    public var requestID: UInt64
    public var prefix: TrackNamespace
    /// Draft-16 only.
    public var options: SubscribeOptions
    public var parameters: KeyValuePairs

    public init(
        requestID: UInt64, prefix: TrackNamespace, options: SubscribeOptions = .namespace,
        parameters: KeyValuePairs = KeyValuePairs()
    ) {
        self.requestID = requestID
        self.prefix = prefix
        self.options = options
        self.parameters = parameters
    }

    func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(requestID)
        prefix.encode(into: &w)
        if version == .draft16 { w.writeVarInt(options.rawValue) }
        parameters.encode(into: &w, version: version)
    }

    static func decode(from r: inout WireReader, version: MoqtVersion) throws(DecodeError) -> SubscribeNamespace {
        let id = try r.readVarInt()
        let prefix = try TrackNamespace.decode(from: &r)
        var options = SubscribeOptions.namespace
        if version == .draft16 {
            let raw = try r.readVarInt()
            guard let o = SubscribeOptions(rawValue: raw) else { throw .invalidValue("subscribe options \(raw)") }
            options = o
        }
        return SubscribeNamespace(
            requestID: id, prefix: prefix, options: options,
            parameters: try KeyValuePairs.decode(from: &r, version: version))
    }
}

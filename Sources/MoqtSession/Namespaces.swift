// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqSync
import MoqWire
import MoqtWire

/// What a namespace subscription of ours hears.
public enum MoqtNamespaceEvent: Sendable, Equatable {
    /// A broadcast (its path: the namespace's fields joined by `/`) is published.
    case announced(String)
    /// It no longer is.
    case unannounced(String)
    /// The peer refused the subscription.
    case refused(code: UInt64, reason: String)
    /// The peer ended the subscription (draft-16: it closed the stream); nothing more comes.
    case ended
}

/// One of our SUBSCRIBE_NAMESPACEs (draft-14: on the control stream, the peer then sends
/// PUBLISH_NAMESPACE; draft-16: on a stream of its own, with NAMESPACE / NAMESPACE_DONE).
final class NamespaceRequest {
    let prefix: String
    let handler: (MoqtNamespaceEvent) -> Void
    var announced: Set<String> = []
    var stream: Int64?
    /// The request id, once the peer granted one.
    var id: UInt64?
    var cancelled = false

    init(prefix: String, handler: @escaping (MoqtNamespaceEvent) -> Void) {
        self.prefix = prefix
        self.handler = handler
    }
}

/// Ends one namespace subscription of a ``MoqtSessionCore`` (on the session's thread).
public final class MoqtNamespaceHandle {
    weak var session: MoqtSessionCore?
    let request: NamespaceRequest

    init(session: MoqtSessionCore, request: NamespaceRequest) {
        self.session = session
        self.request = request
    }

    /// Withdraws the subscription (draft-16: its stream is closed, and its request id goes back to the
    /// peer's window; draft-14: forgotten here, see below). Nothing more is heard. A subscription still
    /// waiting for a request id is dropped before it is sent.
    public func cancel() {
        guard !request.cancelled else { return }
        request.cancelled = true
        guard let session, let id = request.id, session.namespaceRequests.removeValue(forKey: id) != nil else { return }
        if let stream = request.stream {
            session.namespaceStreams[stream] = nil
            session.transport.finish(stream)
            session.transport.stopSending(stream, code: MoqtCode.cancelled)
        }
        // Draft-14: forgotten here only. moq-dev's relay closes the session on UNSUBSCRIBE_NAMESPACE
        // (measured: the interop test's session ended), and it grants 2^32 request ids anyway.
    }
}

/// A draft-16 SUBSCRIBE_NAMESPACE stream, ours or the peer's.
final class NamespaceStream {
    let stream: Int64
    /// True for a stream we opened (our SUBSCRIBE_NAMESPACE).
    let own: Bool
    var reader = ControlStreamReader()
    var requestID: UInt64?
    var served: ServedNamespaces?
    /// The peer's stream opened before its SETUP reached us (streams may overtake one another):
    /// its bytes wait in ``reader`` until then, and whether it ended.
    var finBeforeSetup = false

    init(stream: Int64, own: Bool) {
        self.stream = stream
        self.own = own
    }
}

/// What we advertise to the peer under a prefix of our origin: a SUBSCRIBE_NAMESPACE of the peer's,
/// or (to a peer that did not declare SOLICIT) everything, unsolicited.
final class ServedNamespaces: @unchecked Sendable {  // touched on the session thread only
    weak var session: MoqtSessionCore?
    let prefix: String
    /// Draft-16: the peer's SUBSCRIBE_NAMESPACE stream (NAMESPACE messages); nil: PUBLISH_NAMESPACE.
    let stream: Int64?
    let requestID: UInt64?
    var token: UInt64?
    /// The directory observed (kept: the session may be gone when this stops).
    var directory: (any BroadcastDirectory)?
    var advertised: Set<String> = []
    var stopped = false

    init(session: MoqtSessionCore, prefix: String, stream: Int64?, requestID: UInt64?) {
        self.session = session
        self.prefix = prefix
        self.stream = stream
        self.requestID = requestID
    }

    func start() {
        guard let session, let origin = session.publishOrigin, session.config.listsNamespaces else {
            return
        }
        let box = WeakReference(self)
        let scheduler = session.scheduler
        let (token, current) = origin.observe(prefix: prefix) { event in
            scheduler.execute {
                guard let self = box.value else { return }
                switch event {
                case .announced(let path, _): self.announce(path)
                case .unannounced(let path): self.withdraw(path)
                }
            }
        }
        self.token = token
        directory = origin
        for item in current { announce(item.path) }
    }

    func announce(_ path: String) {
        guard !stopped, let session, !advertised.contains(path) else { return }
        advertised.insert(path)
        if let stream {
            guard let suffix = Self.suffix(path, after: prefix) else { return }
            session.write(.namespace(suffix: suffix), on: stream)
        } else {
            session.publishNamespace(path)
        }
    }

    func withdraw(_ path: String) {
        guard !stopped, let session, advertised.remove(path) != nil else { return }
        if let stream {
            guard let suffix = Self.suffix(path, after: prefix) else { return }
            session.write(.namespaceDone(suffix: suffix), on: stream)
        } else {
            session.withdrawNamespace(path)
        }
    }

    /// Stops observing; what was advertised with PUBLISH_NAMESPACE is withdrawn when `withdrawing`.
    func stop(withdrawing: Bool = false) {
        guard !stopped else { return }
        if withdrawing { for path in advertised { withdraw(path) } }
        stopped = true
        if let token { directory?.stopObserving(token) }
        token = nil
        directory = nil
    }

    /// The namespace `path` below `prefix`, as the tuple draft-16's NAMESPACE carries.
    static func suffix(_ path: String, after prefix: String) -> TrackNamespace? {
        let whole = TrackNamespace(path: path)
        return whole.suffix(after: TrackNamespace(path: prefix))
    }
}

extension MoqtSessionCore {
    // MARK: Ours → the peer

    /// Subscribes to the namespaces under `prefix` (a path; "" for all): `handler` hears each
    /// broadcast the peer publishes there, and its end, until the returned handle cancels it.
    @discardableResult
    public func subscribeNamespace(prefix: String, handler: @escaping (MoqtNamespaceEvent) -> Void)
        -> MoqtNamespaceHandle
    {
        let request = NamespaceRequest(prefix: prefix, handler: handler)
        withRequestID(
            { [weak self] id in
                guard let self, !request.cancelled else { return }
                request.id = id
                self.namespaceRequests[id] = request
                let message = ControlMessage.subscribeNamespace(
                    SubscribeNamespace(requestID: id, prefix: TrackNamespace(path: prefix)))
                if self.version == .draft16 {
                    guard let stream = self.transport.openStream(bidirectional: true) else {
                        self.namespaceRequests[id] = nil
                        return handler(.refused(code: MoqtCode.internalError, reason: "no stream credit"))
                    }
                    request.stream = stream
                    let ns = NamespaceStream(stream: stream, own: true)
                    ns.requestID = id
                    self.namespaceStreams[stream] = ns
                    self.write(message, on: stream)
                } else {
                    self.send(message)
                    // What the peer published before this request (unsolicited: we declare no SOLICIT) is
                    // under the prefix too; moq-dev does not advertise a namespace twice.
                    for path in self.peerPublished.values.sorted() where BroadcastPath.hasPrefix(path, prefix) {
                        if request.announced.insert(path).inserted { handler(.announced(path)) }
                    }
                }
            }, wanted: { !request.cancelled },
            refused: { [weak self] in
                let why = self?.phase == .closed ? "the session closed" : "too many requests queued"
                handler(.refused(code: MoqtCode.internalError, reason: why))
            })
        return MoqtNamespaceHandle(session: self, request: request)
    }

    /// Hears what the peer publishes with PUBLISH_NAMESPACE: what it has published so far at once,
    /// then each new one and each withdrawal (one observer; a relay taking in an IETF publisher).
    public func observePeerNamespaces(_ handler: @escaping (MoqtNamespaceEvent) -> Void) {
        peerNamespaceObserver = handler
        for path in peerPublished.values.sorted() { handler(.announced(path)) }
    }

    /// PUBLISH_NAMESPACE for `path` (once, however many observers advertise it).
    func publishNamespace(_ path: String) {
        guard published[path] == nil else { return }
        published[path] = .max  // taken; the id comes when the peer grants one
        withRequestID(
            { [weak self] id in
                guard let self else { return }
                self.published[path] = id
                self.send(.publishNamespace(PublishNamespace(requestID: id, namespace: TrackNamespace(path: path))))
            }, wanted: { [weak self] in self?.published[path] == .max },  // withdrawn and republished: one request
            refused: { [weak self] in self?.published[path] = nil })
    }

    func withdrawNamespace(_ path: String) {
        guard let id = published.removeValue(forKey: path), id != .max else { return }
        let target: NamespaceTarget = version == .draft14 ? .namespace(TrackNamespace(path: path)) : .request(id)
        send(.publishNamespaceDone(target))
    }

    /// To a peer that did not declare SOLICIT: everything, unsolicited.
    func advertiseUnsolicited() {
        let all = ServedNamespaces(session: self, prefix: "", stream: nil, requestID: nil)
        unsolicited = all
        all.start()
    }

    /// The peer's SUBSCRIBE_NAMESPACE: OK, then what is published under the prefix.
    func serveNamespaces(_ request: SubscribeNamespace, stream: Int64?) {
        guard let prefix = request.prefix.path else {
            send(
                .requestError(
                    RequestError(
                        kind: version == .draft14 ? .subscribeNamespace : nil, requestID: request.requestID,
                        code: MoqtCode.notSupported, reason: "binary namespace fields")),
                on: stream)
            return peerRequestEnded()
        }
        send(
            .requestOk(
                RequestOk(kind: version == .draft14 ? .subscribeNamespace : nil, requestID: request.requestID)),
            on: stream)
        let served = ServedNamespaces(session: self, prefix: prefix, stream: stream, requestID: request.requestID)
        servedNamespaces[request.requestID] = served
        if let stream { namespaceStreams[stream]?.served = served }
        served.start()
    }

    /// Draft-14's UNSUBSCRIBE_NAMESPACE (by prefix, or by request id as moq-dev's JS port sends it).
    func stopServingNamespaces(_ target: NamespaceTarget) {
        let id: UInt64?
        switch target {
        case .request(let r): id = r
        case .namespace(let ns): id = servedNamespaces.first { $0.value.prefix == ns.path }?.key
        }
        guard let id, let served = servedNamespaces.removeValue(forKey: id) else { return }
        served.stop()
        peerRequestEnded()
    }

    // MARK: The peer's → ours

    /// The peer's PUBLISH_NAMESPACE: OK (or UNAUTHORIZED when ``acceptsPeerNamespace`` says no),
    /// and each namespace subscription of ours whose prefix covers it hears of it.
    func peerPublishedNamespace(_ request: PublishNamespace) {
        func refuse(_ code: UInt64, _ reason: String) {
            send(
                .requestError(
                    RequestError(
                        kind: version == .draft14 ? .publishNamespace : nil, requestID: request.requestID, code: code,
                        reason: reason)))
            peerRequestEnded()
        }
        if let path = request.namespace.path, acceptsPeerNamespace?(path) == false {
            return refuse(MoqtCode.unauthorized, "'\(path)' is not yours to publish here")
        }
        guard let path = request.namespace.path, peerPublished.count < config.maxAnnounced else {
            return refuse(MoqtCode.internalError, "not accepted")
        }
        peerPublished[request.requestID] = path
        send(.requestOk(RequestOk(kind: version == .draft14 ? .publishNamespace : nil, requestID: request.requestID)))
        peerNamespaceObserver?(.announced(path))
        for ns in namespaceRequests.values where ns.stream == nil && BroadcastPath.hasPrefix(path, ns.prefix) {
            if ns.announced.insert(path).inserted { ns.handler(.announced(path)) }
        }
    }

    func peerWithdrewNamespace(_ target: NamespaceTarget) {
        let id: UInt64?
        switch target {
        case .request(let r): id = r
        case .namespace(let ns): id = peerPublished.first { $0.value == ns.path }?.key
        }
        guard let id, let path = peerPublished.removeValue(forKey: id) else { return }
        peerRequestEnded()
        peerNamespaceObserver?(.unannounced(path))
        // Only the requests PUBLISH_NAMESPACE serves (draft-16's streams hear NAMESPACE_DONE on their own).
        for ns in namespaceRequests.values where ns.stream == nil && ns.announced.remove(path) != nil {
            ns.handler(.unannounced(path))
        }
    }

    // MARK: Draft-16 namespace streams

    /// What the peer's namespace streams may hold in all before its SETUP arrived (a few requests).
    static let maxBytesBeforeSetup = 16 * 1024

    /// Keeps the bytes of a peer's namespace stream that came before its SETUP (bounded in all).
    func holdBeforeSetup(_ ns: NamespaceStream, _ bytes: [UInt8], fin: Bool) {
        ns.reader.append(bytes)
        ns.finBeforeSetup = ns.finBeforeSetup || fin
        let held = namespaceStreams.values.reduce(0) { $0 + ($1.own ? 0 : $1.reader.buffered) }
        if held > Self.maxBytesBeforeSetup {
            close(.protocolViolation, reason: "more than \(Self.maxBytesBeforeSetup) bytes of requests before SETUP")
        }
    }

    /// Once SETUP is done: the namespace streams that came before it are read.
    func readStreamsHeldForSetup() {
        for ns in namespaceStreams.values.sorted(by: { $0.stream < $1.stream })
        where !ns.own && (ns.reader.buffered > 0 || ns.finBeforeSetup) {
            guard phase == .ready else { return }
            receiveNamespaceStream(ns, [], fin: ns.finBeforeSetup)
        }
    }

    func receiveNamespaceStream(_ ns: NamespaceStream, _ bytes: [UInt8], fin: Bool) {
        ns.reader.append(bytes)
        while phase != .closed, let (type, payload) = ns.reader.next() {
            let message: ControlMessage
            do {
                message = try ControlMessage.decode(type: type, payload: payload, version: version)
            } catch {
                return close(.protocolViolation, reason: "SUBSCRIBE_NAMESPACE stream: \(error)")
            }
            handleNamespaceStream(ns, message)
        }
        if fin { namespaceStreamEnded(ns) }
    }

    func handleNamespaceStream(_ ns: NamespaceStream, _ message: ControlMessage) {
        if ns.own {
            guard let id = ns.requestID, let request = namespaceRequests[id] else { return }
            switch message {
            case .requestOk:
                break
            case .requestError(let error):
                namespaceRequests[id] = nil
                request.handler(.refused(code: error.code, reason: error.reason))
            case .namespace(let suffix):
                guard let path = suffix.prefixed(by: TrackNamespace(path: request.prefix)).path else { return }
                guard request.announced.count < config.maxAnnounced else {
                    return close(.tooManyRequests, reason: "more than \(config.maxAnnounced) namespaces")
                }
                if request.announced.insert(path).inserted { request.handler(.announced(path)) }
            case .namespaceDone(let suffix):
                guard let path = suffix.prefixed(by: TrackNamespace(path: request.prefix)).path,
                    request.announced.remove(path) != nil
                else {
                    return close(.protocolViolation, reason: "NAMESPACE_DONE before its NAMESPACE")
                }
                request.handler(.unannounced(path))
            default:
                close(.protocolViolation, reason: "an unexpected message on a SUBSCRIBE_NAMESPACE stream")
            }
        } else {
            guard ns.requestID == nil, case .subscribeNamespace(let request) = message else {
                return close(.protocolViolation, reason: "an unexpected message on a SUBSCRIBE_NAMESPACE stream")
            }
            guard acceptPeerRequest(request.requestID) else { return }
            ns.requestID = request.requestID
            serveNamespaces(request, stream: ns.stream)
        }
    }

    /// A draft-16 namespace stream ended (FIN, reset or STOP_SENDING): the subscription is over.
    func namespaceStreamEnded(_ ns: NamespaceStream) {
        namespaceStreams[ns.stream] = nil
        if ns.own {
            guard let id = ns.requestID, let request = namespaceRequests.removeValue(forKey: id) else { return }
            for path in request.announced { request.handler(.unannounced(path)) }
            request.handler(.ended)
        } else if let id = ns.requestID, let served = servedNamespaces.removeValue(forKey: id) {
            served.stop()
            transport.finish(ns.stream)
            peerRequestEnded()
        }
    }

    /// Writes a control-framed message on `stream` (the control stream when nil).
    func send(_ message: ControlMessage, on stream: Int64?) {
        if let stream { write(message, on: stream) } else { send(message) }
    }

    func write(_ message: ControlMessage, on stream: Int64) {
        guard let bytes = message.encoded(version: version) else { return }
        transport.write(stream, Bytes(bytes), fin: false)
    }
}

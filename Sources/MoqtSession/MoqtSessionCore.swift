// SPDX-License-Identifier: MIT
public import MoqModel
public import MoqSession
import MoqSync
import MoqWire
public import MoqtWire

/// Setup, goaway and close of a ``MoqtSessionCore``, on the session's thread.
public protocol MoqtSessionDelegate: AnyObject {
    /// CLIENT_SETUP and SERVER_SETUP crossed: requests may flow.
    func moqtSessionReady(_ session: MoqtSessionCore)
    /// The peer sent GOAWAY (with the URI to move to, possibly empty).
    func moqtSession(_ session: MoqtSessionCore, goaway uri: String)
    /// The session ended.
    func moqtSession(_ session: MoqtSessionCore, closed reason: MoqtCloseReason)
}

/// A MoQ Transport session (draft-14 or draft-16), both roles, without I/O: the IETF family beside
/// moq-lite's ``SessionCore``, on the same model.
///
/// It serves ``publishOrigin`` to the peer — a broadcast path `room/cam` is the namespace tuple
/// `("room","cam")` and a track keeps its name, moq-dev's mapping, so a moq-dev player reads what
/// a SwiftMoQ publisher writes and the reverse — and makes requests for its owner
/// (``subscribe(broadcast:track:into:filter:priority:)``, ``subscribeNamespace(prefix:handler:)``).
/// Groups travel one per unidirectional stream (subgroup 0, object ids 0, 1, 2… = frame indices),
/// into and out of the same ``TrackProducer`` caches moq-lite sessions use, so a relay holds one
/// origin for both families.
///
/// Driven by transport events and API calls on one thread (the scheduler's), like ``SessionCore``.
/// Every count a peer feeds is bounded (``MoqtSessionConfig``): the request ids it may use (a
/// window raised as its requests end), streams waiting for an alias, queued groups, announcements.
public final class MoqtSessionCore: TransportEventSink {
    enum Phase {
        case idle
        case waitingForSetup
        case ready
        case closed
    }

    /// How the session behaves.
    public let config: MoqtSessionConfig
    /// The connection.
    public let transport: any SessionTransport
    /// The session thread.
    public let scheduler: any SessionScheduler
    /// What we offer the peer; nil refuses every subscription.
    public var publishOrigin: (any BroadcastDirectory)?
    /// Receives setup, goaway and close.
    public weak var delegate: (any MoqtSessionDelegate)?
    /// Why the session ended, once it has.
    public private(set) var closeReason: MoqtCloseReason?
    /// The client's PATH setup parameter (servers; nil when it sent none).
    public internal(set) var peerPath: String?
    /// The peer's IMPLEMENTATION setup parameter.
    public internal(set) var peerImplementation: String?
    /// Counters for stats and tests.
    public internal(set) var counters = MoqtCounters()

    /// The draft spoken.
    public var version: MoqtVersion { config.version }
    /// True once SETUP crossed and until close.
    public var isReady: Bool { phase == .ready }
    /// True once closed.
    public var isClosed: Bool { phase == .closed }
    /// True once SETUP crossed, also after the session closed (for the statistics it closed with).
    public internal(set) var wasReady = false

    var phase = Phase.idle
    var controlStream: Int64?
    var control = ControlStreamReader()
    var setupTimer: (any Cancellable)?

    // Request ids: ours, and the bound the peer granted (exclusive).
    var nextRequestID: UInt64
    var peerMaxRequestID: UInt64 = 0
    /// Our requests waiting for the peer to grant an id.
    var waitingForRequestID: [QueuedRequest] = []
    // The peer's: the next it must use, the bound we granted (exclusive), how many are open.
    var expectedPeerRequestID: UInt64
    /// Draft-16: the peer's ids that arrived before one below them (another stream overtook); each
    /// lies inside the granted window, so there are at most ``MoqtSessionConfig/maxPeerRequests``.
    var peerRequestsAhead: Set<UInt64> = []
    var grantedPeerRequestID: UInt64 = 0
    var openPeerRequests: UInt64 = 0
    /// The peer declared moq-dev's SOLICIT: advertise to it only in answer to SUBSCRIBE_NAMESPACE.
    var peerSolicits = false

    // Streams.
    var incomingGroups: [Int64: IncomingSubgroup] = [:]
    var namespaceStreams: [Int64: NamespaceStream] = [:]
    var outgoingGroups: [Int64: MoqtServedSubscription] = [:]
    var incomingFetches: [Int64: IncomingFetch] = [:]
    /// Fetch streams we are sending, and the request each answers (until the transport is done with it).
    var servedFetchStreams: [Int64: UInt64] = [:]

    // Requests.
    var served: [UInt64: MoqtServedSubscription] = [:]
    var subscriptions: [UInt64: MoqtSubscription] = [:]
    var aliases: [UInt64: MoqtSubscription] = [:]
    /// Our joining FETCHes, by request id.
    var fetches: [UInt64: OwnFetch] = [:]
    var servedNamespaces: [UInt64: ServedNamespaces] = [:]
    var namespaceRequests: [UInt64: NamespaceRequest] = [:]
    /// Draft-16 REQUEST_UPDATEs of ours not answered yet, oldest first (at most
    /// ``maxUpdatesAwaitingAnswer``: an answer that never comes costs nothing past that).
    var updatesAwaitingAnswer: [UInt64] = []
    static let maxUpdatesAwaitingAnswer = 64
    /// PUBLISH_NAMESPACE we sent, by path: the request id (draft-16's DONE names it).
    var published: [String: UInt64] = [:]
    /// What PUBLISH_NAMESPACE advertises unsolicited (a peer that did not declare SOLICIT).
    var unsolicited: ServedNamespaces?
    /// The peer's PUBLISH_NAMESPACE, by request id: the path.
    var peerPublished: [UInt64: String] = [:]
    /// Hears the peer's PUBLISH_NAMESPACEs and their withdrawal (a relay taking in a publisher).
    var peerNamespaceObserver: ((MoqtNamespaceEvent) -> Void)?
    /// Decides on each PUBLISH_NAMESPACE of the peer's (its path): false answers UNAUTHORIZED (a
    /// relay refusing what lies outside a publisher's grant). Nil accepts every one.
    public var acceptsPeerNamespace: ((String) -> Bool)?
    /// Group streams read but not yet matched to a subscription (SUBSCRIBE_OK still on its way).
    var unknownAliasStreams: [Int64] = []
    /// Served subscriptions waiting for the connection to drain or for stream credit.
    var waitingForRoom: [MoqtServedSubscription] = []

    public init(
        config: MoqtSessionConfig, transport: any SessionTransport, scheduler: any SessionScheduler,
        publishOrigin: (any BroadcastDirectory)? = nil
    ) {
        self.config = config
        self.transport = transport
        self.scheduler = scheduler
        self.publishOrigin = publishOrigin
        // Clients use even request ids from 0, servers odd ones from 1.
        nextRequestID = transport.isClient ? 0 : 1
        expectedPeerRequestID = transport.isClient ? 1 : 0
    }

    /// A core dropped without a close still lets go of the tracks it served: each served subscription
    /// observes its track, and the track would keep it (and itself) alive (the stateful fuzzer's find).
    deinit {
        // A fetch still waiting is answered (its caller may be suspended on it).
        for fetch in fetches.values { fetch.completion?(.failure(.sessionClosed)) }
        for request in waitingForRequestID where request.wanted() { request.refused() }
        for subscription in served.values { subscription.stop() }
        for namespaces in servedNamespaces.values { namespaces.stop() }
        unsolicited?.stop()
    }

    // MARK: - Transport events

    /// The handshake completed: a client opens the control stream and sends CLIENT_SETUP.
    public func connected() {
        guard phase == .idle else { return }
        phase = .waitingForSetup
        grantedPeerRequestID = expectedPeerRequestID &+ 2 &* config.maxPeerRequests
        if transport.isClient {
            guard let stream = transport.openStream(bidirectional: true) else {
                return close(.internalError, reason: "no bidirectional stream for the control stream")
            }
            controlStream = stream
            transport.setSendOrder(stream, Int64.max)
            let parameters = KeyValuePairs.setup(
                path: config.path, maxRequestID: grantedPeerRequestID, implementation: config.implementation)
            let versions = version == .draft14 ? [version.code] : []
            send(.clientSetup(ClientSetup(versions: versions, parameters: parameters)))
        }
        let box = WeakReference(self)
        setupTimer = scheduler.schedule(after: config.setupTimeout) {
            guard let self = box.value, self.phase == .waitingForSetup else { return }
            self.close(.controlMessageTimeout, reason: "no SETUP from the peer")
        }
    }

    public func streamOpened(_ stream: Int64) {
        guard phase != .closed else { return }
        if StreamID.isUnidirectional(stream) {
            if incomingGroups[stream] == nil {
                incomingGroups[stream] = IncomingSubgroup(stream: stream, version: version)
            }
        } else if controlStream == nil && !transport.isClient {
            controlStream = stream
            transport.setSendOrder(stream, Int64.max)
        } else if stream != controlStream, namespaceStreams[stream] == nil {
            // Draft-16: a SUBSCRIBE_NAMESPACE stream. A client may see one ahead of the server's SETUP
            // (the server may ask as soon as our CLIENT_SETUP granted it ids, and its stream can overtake
            // its SERVER_SETUP); a server never legitimately does, so it holds nothing before SETUP.
            guard version == .draft16, phase == .ready || transport.isClient else {
                return close(.protocolViolation, reason: "a second bidirectional stream on \(version) before SETUP")
            }
            namespaceStreams[stream] = NamespaceStream(stream: stream, own: false)
        }
    }

    public func received(stream: Int64, data: UnsafeRawBufferPointer, fin: Bool) {
        guard phase != .closed else { return }
        let bytes = [UInt8](data)
        if isPeerInitiated(stream) && !isKnown(stream) { streamOpened(stream) }
        defer { if phase != .closed { transport.consumed(stream, bytes: bytes.count) } }
        if stream == controlStream {
            if fin { return close(.protocolViolation, reason: "the control stream ended") }
            control.append(bytes)
            while phase != .closed, let (type, payload) = control.next() {
                handleControl(type: type, payload: payload)
            }
        } else if let group = incomingGroups[stream] {
            // A unidirectional stream is a fetch stream when its type (one byte) says so.
            if group.decoder.header == nil, group.decoder.buffered == 0, bytes.first == UInt8(FetchHeader.streamType) {
                incomingGroups[stream] = nil
                let fetch = IncomingFetch(stream: stream, version: version)
                incomingFetches[stream] = fetch
                return receiveFetch(fetch, bytes, fin: fin)
            }
            receiveGroup(group, bytes, fin: fin)
        } else if let fetch = incomingFetches[stream] {
            receiveFetch(fetch, bytes, fin: fin)
        } else if let ns = namespaceStreams[stream] {
            guard phase == .ready else { return holdBeforeSetup(ns, bytes, fin: fin) }
            receiveNamespaceStream(ns, bytes, fin: fin)
        }
    }

    public func streamReset(stream: Int64, wireCode: UInt64) {
        guard phase != .closed else { return }
        if stream == controlStream { return close(.protocolViolation, reason: "the control stream was reset") }
        if let group = incomingGroups.removeValue(forKey: stream) {
            group.producer?.abort(.cancel)
            unknownAliasStreams.removeAll { $0 == stream }
            // A parked group's joining FETCH is no longer wanted.
            if let joining = group.subscription?.joining, joining.stream === group {
                endJoiningFetch(joining, cancel: true, resume: false)
            }
            group.subscription?.streamEnded()
        } else if let fetch = incomingFetches.removeValue(forKey: stream) {
            if let joining = fetch.joining { endJoiningFetch(joining, cancel: false, failure: .cancel) }
        } else if let ns = namespaceStreams[stream] {
            namespaceStreamEnded(ns)
        }
    }

    public func stopSending(stream: Int64, wireCode: UInt64) {
        guard phase != .closed else { return }
        if stream == controlStream { return close(.protocolViolation, reason: "STOP_SENDING on the control stream") }
        if let subscription = outgoingGroups[stream] {
            subscription.groupStopped(stream: stream)
        } else if let id = servedFetchStreams[stream] {
            fetchCancelled(id)
        } else if let ns = namespaceStreams[stream] {
            namespaceStreamEnded(ns)
        }
    }

    /// A peer's group stream that closed is forgotten when its FIN has been read (a stream held for
    /// its SUBSCRIBE_OK stays until then); ours, when the transport is done with it.
    public func streamClosed(stream: Int64) {
        outgoingGroups[stream] = nil
        servedFetchStreams[stream] = nil
    }

    /// An OBJECT_DATAGRAM: object 0 that ends its group, written into the subscription its alias names
    /// as a one-frame datagram group stamped with its Timestamp property (moq-dev's mapping; a group of
    /// several objects sent as datagrams has no such form here). Anything else is dropped and counted;
    /// one that does not decode closes nothing (moq-dev drops those too).
    public func datagramReceived(_ data: UnsafeRawBufferPointer) {
        guard phase == .ready else { return }
        let datagram: ObjectDatagram
        do {
            datagram = try ObjectDatagram.decode(Bytes(copying: data), version: version)
        } catch {
            counters.malformedDatagrams += 1
            return
        }
        guard let subscription = aliases[datagram.trackAlias], datagram.object == 0, datagram.endOfGroup,
            case .payload(let payload) = datagram.body,
            subscription.track.receiveDatagram(
                sequence: datagram.group, Frame(timestamp: datagram.timestamp ?? 0, payload: payload))
        else {
            counters.datagramsIgnored += 1
            return
        }
        counters.datagramsReceived += 1
        counters.objectsReceived += 1
    }

    public func streamCreditAvailable(bidirectional: Bool) { resumeWaiting() }

    public func sendBufferDrained() { resumeWaiting() }

    public func transportClosed(_ reason: SessionCloseReason) {
        guard phase != .closed else { return }
        let why: MoqtCloseReason =
            switch reason {
            case .local(let code, let text): .local(MoqtSessionError(rawValue: code.rawValue) ?? .internalError, text)
            case .remote(let code, let text): .remote(code.rawValue, text)
            case .transport(let text): .transport(text)
            }
        finishClosing(why)
    }

    /// GOAWAY: asks the peer to move to `uri` (a server's; "" for the same one) before this session closes.
    public func sendGoaway(uri: String = "") {
        guard phase == .ready, !transport.isClient || uri.isEmpty else { return }
        send(.goaway(newSessionURI: uri))
    }

    /// The peer closed the connection with an application `code` (a MoQ Transport termination code).
    public func peerClosed(code: UInt64, reason: String) {
        guard phase != .closed else { return }
        finishClosing(.remote(code, reason))
    }

    // MARK: - Closing

    /// Closes the session with a MoQ Transport termination code.
    public func close(_ code: MoqtSessionError = .noError, reason: String = "") {
        guard phase != .closed else { return }
        transport.close(code: code.rawValue, reason: reason)
        finishClosing(.local(code, reason))
    }

    func finishClosing(_ reason: MoqtCloseReason) {
        phase = .closed
        closeReason = reason
        setupTimer?.cancel()
        for subscription in served.values { subscription.stop() }
        for subscription in subscriptions.values {
            if let code = subscription.sessionClosedCode { subscription.track.abort(code) }
        }
        for group in incomingGroups.values { group.producer?.abort(.sessionClosed) }
        for fetch in fetches.values {
            fetch.timer?.cancel()
            fetch.completion?(.failure(.sessionClosed))
            fetch.completion = nil
        }
        for ns in servedNamespaces.values { ns.stop() }
        unsolicited?.stop()
        for request in namespaceRequests.values {
            for path in request.announced { request.handler(.unannounced(path)) }
        }
        served = [:]
        subscriptions = [:]
        aliases = [:]
        incomingGroups = [:]
        fetches = [:]
        incomingFetches = [:]
        servedFetchStreams = [:]
        servedNamespaces = [:]
        namespaceRequests = [:]
        unsolicited = nil
        peerNamespaceObserver = nil
        waitingForRoom = []
        let queued = waitingForRequestID
        waitingForRequestID = []
        for request in queued where request.wanted() { request.refused() }
        delegate?.moqtSession(self, closed: reason)
    }

    // MARK: - Helpers

    func isPeerInitiated(_ stream: Int64) -> Bool { StreamID.isServerInitiated(stream) == transport.isClient }

    func isKnown(_ stream: Int64) -> Bool {
        stream == controlStream || incomingGroups[stream] != nil || namespaceStreams[stream] != nil
            || incomingFetches[stream] != nil
    }

    /// Writes a control message on the control stream.
    func send(_ message: ControlMessage) {
        guard let stream = controlStream, let bytes = message.encoded(version: version) else { return }
        transport.write(stream, Bytes(bytes), fin: false)
    }

    /// Served subscriptions that wait for room get another try.
    func resumeWaiting() {
        guard phase == .ready else { return }
        let waiting = waitingForRoom
        waitingForRoom = []
        for subscription in waiting { subscription.pump() }
    }

    /// A served subscription has more to send than the connection takes now: it waits for the
    /// unsent bytes to drain (`drain`) or for the peer's stream credit (``streamCreditAvailable(bidirectional:)``).
    func waitForRoom(_ subscription: MoqtServedSubscription, drain: Bool) {
        if !waitingForRoom.contains(where: { $0 === subscription }) { waitingForRoom.append(subscription) }
        if drain { transport.notifyWhenUnsent(below: config.maxUnsentBytes / 2) }
    }
}

/// What a MoQ Transport session counted.
public struct MoqtCounters: Sendable, Equatable {
    /// Control messages received.
    public var controlMessages: UInt64 = 0
    /// Subscriptions the peer made that we served, and refused.
    public var subscriptionsServed: UInt64 = 0
    public var subscriptionsRefused: UInt64 = 0
    /// Group streams we opened, and objects we wrote.
    public var groupsSent: UInt64 = 0
    public var objectsSent: UInt64 = 0
    /// Group streams and objects received.
    public var groupsReceived: UInt64 = 0
    public var objectsReceived: UInt64 = 0
    /// Groups a served subscription skipped because too many were queued behind a slow connection.
    public var groupsSkipped: UInt64 = 0
    /// Group streams stopped because no subscription claimed their alias in time (or too many waited).
    public var unknownAliasStreamsStopped: UInt64 = 0
    /// Requests the peer made that this core does not implement (answered NOT_SUPPORTED).
    public var unsupportedRequests: UInt64 = 0
    /// SUBSCRIBE_UPDATE / REQUEST_UPDATEs we sent, the peer's we applied, and the peer's for a
    /// subscription we do not serve.
    public var updatesSent: UInt64 = 0
    public var updatesApplied: UInt64 = 0
    public var updatesRefused: UInt64 = 0
    /// Our updates dropped because too many requests waited for an id.
    public var updatesDropped: UInt64 = 0
    /// The peer's answers to our draft-16 REQUEST_UPDATEs: REQUEST_OK, REQUEST_ERROR.
    public var updatesAccepted: UInt64 = 0
    public var updatesRefusedByPeer: UInt64 = 0
    /// OBJECT_DATAGRAMs sent (datagram groups that fit) and received (written into a track).
    public var datagramsSent: UInt64 = 0
    public var datagramsReceived: UInt64 = 0
    /// Datagrams dropped: for an alias no subscription holds, a status, an object past 0 or one that
    /// does not end its group, a group the track already has, or a track that ended.
    public var datagramsIgnored: UInt64 = 0
    /// Datagrams that did not decode (dropped: a datagram belongs to no stream to close).
    public var malformedDatagrams: UInt64 = 0
    /// Joining FETCHes we asked (a subscription that came into the middle of a group), and the
    /// objects fetch streams brought for them.
    public var joiningFetches: UInt64 = 0
    public var fetchedObjects: UInt64 = 0
    /// FETCHes of the peer's we served (from the cache), and refused.
    public var fetchesServed: UInt64 = 0
    public var fetchesRefused: UInt64 = 0

    public init() {}
}

// SPDX-License-Identifier: MIT
import MoqSync
public import MoqWire

/// A moq-lite-06 session, both roles, without I/O.
///
/// The core is driven by transport events (``connected()``, ``received(stream:data:fin:)``…)
/// and API calls, all on one thread (the scheduler's); it acts through a
/// ``SessionTransport``. It serves ``publishOrigin`` to the peer (announces, TRACK,
/// SUBSCRIBE, FETCH, PROBE) and makes requests of the peer for its owner
/// (``requestAnnounces(prefix:handler:)``, ``subscribe(broadcast:track:range:into:)``…).
public final class SessionCore {
    enum Phase {
        case idle
        case waitingForSetup
        case ready
        case closed
    }

    /// How the session behaves.
    public let config: SessionConfig
    /// The connection.
    public let transport: any SessionTransport
    /// The session thread.
    public let scheduler: any SessionScheduler
    /// Receives setup, goaway and close events.
    public weak var delegate: (any SessionCoreDelegate)?
    /// What we offer the peer; nil answers every request as unroutable.
    public var publishOrigin: (any BroadcastDirectory)?
    /// The peer's SETUP, once received.
    public private(set) var peerSetup: Setup?
    /// Why the session ended, once it has.
    public private(set) var closeReason: SessionCloseReason?
    /// Counters for stats and tests.
    public internal(set) var counters = SessionCounters()

    var phase = Phase.idle
    /// What the stream handlers may do with this core.
    var context: HandlerContext { HandlerContext(self) }
    var handlers: [Int64: any StreamHandler] = [:]
    /// What each stream's handler held after its last event (see ``settle(_:arrived:)``).
    var held: [Int64: (bytes: Int, holdsCredit: Bool)] = [:]
    /// Streams the peer opened before SETUP completed.
    var preSetupStreams = 0
    /// The peer opened its Setup stream.
    var setupStreamSeen = false
    var setupTimer: (any Cancellable)?
    /// Peer request streams that arrived before the SETUP exchange completed.
    var earlyStreams: [Int64] = []
    /// Served subscriptions waiting for the connection to drain, and the threshold asked for.
    var roomWaiters: [WeakReference<ServedSubscription>] = []
    var drainRequested: Int?
    /// Opens waiting for stream credit.
    var pendingBidiOpens: [PendingOpen] = []
    var pendingUniOpens: [PendingOpen] = []
    /// Our subscriptions by id (group streams and datagrams find them here).
    var ownSubscriptions: [UInt64: RequestedSubscription] = [:]
    var nextSubscribeID: UInt64 = 0
    /// Requests served to the peer, by kind (each capped by ``SessionLimits``).
    var served = ServedCounts()
    /// Broadcasts the peer announced to us, across our announce requests.
    var announcedCount = 0
    /// Requests made before the session was ready.
    var deferredRequests: [() -> Void] = []
    var lastLimitReport: UInt64 = 0
    var lastLimitEvent: SessionLimitEvent?

    public init(
        config: SessionConfig, transport: any SessionTransport, scheduler: any SessionScheduler,
        publishOrigin: (any BroadcastDirectory)? = nil
    ) {
        self.config = config
        self.transport = transport
        self.scheduler = scheduler
        self.publishOrigin = publishOrigin
    }

    /// True once both SETUP messages are exchanged and until close.
    public var isReady: Bool { phase == .ready }
    /// True once closed.
    public var isClosed: Bool { phase == .closed }
    /// Groups we are still sending, waiting to open a stream for, or holding in a subscription's
    /// queue (back-pressure).
    public var activeServedGroups: Int {
        pendingUniOpens.count + handlers.values.reduce(0) { $0 + $1.pendingGroups }
    }
    var clock: any MoqClock { scheduler.clock }

    // MARK: - Transport events

    /// The QUIC handshake completed. Clients send SETUP at once; servers wait for the client's.
    public func connected() {
        guard phase == .idle else { return }
        phase = .waitingForSetup
        if transport.isClient { sendSetup() }
        let box = WeakReference(self)
        setupTimer = scheduler.schedule(after: config.setupTimeout) {
            // The scheduler runs this on the session thread.
            guard let self = box.value, self.phase == .waitingForSetup else { return }
            self.close(.timeout, reason: "no SETUP from the peer")
        }
    }

    /// The peer opened a stream (before its first data).
    public func streamOpened(_ stream: Int64) {
        guard phase != .closed, handlers[stream] == nil else { return }
        if phase != .ready {
            // Before SETUP only the peer's Setup stream (and a few early requests) make sense.
            preSetupStreams += 1
            if preSetupStreams > config.limits.maxPendingStreams {
                hitLimit(.pendingStreams(config.limits.maxPendingStreams))
                abortStream(stream, .cancel, resetSend: !StreamID.isUnidirectional(stream))
                handlers[stream] = DrainingStream(session: context, stream: stream)
                return
            }
        }
        if StreamID.isUnidirectional(stream) {
            handlers[stream] = IncomingUniStream(session: context, stream: stream)
        } else {
            handlers[stream] = IncomingRequestStream(session: context, stream: stream)
        }
    }

    /// Bytes arrived on a stream.
    public func received(stream: Int64, data: UnsafeRawBufferPointer, fin: Bool) {
        guard phase != .closed else { return }
        if handlers[stream] == nil && isPeerInitiated(stream) { streamOpened(stream) }
        handlers[stream]?.received(data, fin: fin)
        settle(stream, arrived: data.count)
    }

    /// The peer reset a stream.
    public func streamReset(stream: Int64, wireCode: UInt64) {
        guard phase != .closed else { return }
        handlers[stream]?.peerReset(wireCode: wireCode)
        settle(stream, arrived: 0)
    }

    /// The peer sent STOP_SENDING.
    public func stopSending(stream: Int64, wireCode: UInt64) {
        guard phase != .closed else { return }
        handlers[stream]?.peerStopSending(wireCode: wireCode)
        settle(stream, arrived: 0)
    }

    /// Both halves of a stream are closed; its id is no longer valid.
    public func streamClosed(stream: Int64) {
        handlers[stream] = nil
        settle(stream, arrived: 0)
    }

    /// Bytes received and still held across the session (incomplete messages and frames).
    public private(set) var incomingBufferedBytes = 0

    /// What the session holds on the peer's behalf, against ``SessionLimits``.
    public var resourceUsage: SessionResourceUsage {
        SessionResourceUsage(
            incomingBufferedBytes: incomingBufferedBytes,
            incomingCreditHeldBytes: held.values.reduce(0) { $0 + ($1.holdsCredit ? $1.bytes : 0) },
            streamHandlers: handlers.count, servedSubscriptions: served[.subscription],
            servedTrackRequests: served[.trackRequest], servedFetches: served[.fetch],
            servedAnnounces: served[.announce], servedProbes: served[.probe], announcedBroadcasts: announcedCount,
            ownSubscriptions: ownSubscriptions.count, pendingGroupOpens: pendingUniOpens.count,
            pendingRequestOpens: pendingBidiOpens.count)
    }

    /// Accounts for what the handler of `stream` holds after an event: flow-control credit
    /// for bytes it no longer holds (or never held) goes back to the peer, and the session's
    /// incoming budget is enforced on the stream that just grew.
    func settle(_ stream: Int64, arrived: Int) {
        let before = held[stream]
        let handler = handlers[stream]
        let bytes = handler?.bufferedBytes ?? 0
        let holdsCredit = handler?.holdsCredit ?? false
        let creditBefore = before.map { $0.holdsCredit ? $0.bytes : 0 } ?? 0
        let creditAfter = holdsCredit ? bytes : 0
        let release = arrived + creditBefore - creditAfter
        if release > 0, phase != .closed { transport.consumed(stream, bytes: release) }
        incomingBufferedBytes += bytes - (before?.bytes ?? 0)
        held[stream] = bytes > 0 ? (bytes, holdsCredit) : nil
        if bytes > (before?.bytes ?? 0), incomingBufferedBytes > config.limits.maxIncomingBytes, let handler {
            // Over the session's budget: the stream that grew is the one that pays.
            hitLimit(.incomingBytes(config.limits.maxIncomingBytes))
            counters.malformedStreams += 1
            let code: StreamErrorCode = holdsCredit ? .internal : .frameTooLarge
            // The handler sees its stream die with that code (it releases what it holds).
            handler.peerReset(wireCode: code.wireValue)
            abortStream(stream, code, resetSend: !StreamID.isUnidirectional(stream) || !isPeerInitiated(stream))
            handlers[stream] = DrainingStream(session: context, stream: stream)
            settle(stream, arrived: 0)
        }
    }

    /// Replaces the handler of `stream` (a request dispatched, a stream whose work is done)
    /// and accounts for what the old one held.
    func install(_ handler: (any StreamHandler)?, on stream: Int64) {
        handlers[stream] = handler
        settle(stream, arrived: 0)
    }

    /// A QUIC DATAGRAM arrived.
    public func datagramReceived(_ data: UnsafeRawBufferPointer) {
        guard phase == .ready else { return }
        guard let datagram = try? Datagram.decode(Bytes(copying: data)) else {
            counters.malformedDatagrams += 1
            return
        }
        // Unknown subscription ids are dropped silently (moq-lite rule).
        ownSubscriptions[datagram.subscribeID]?.datagram(datagram)
    }

    /// The peer raised its stream limit.
    public func streamCreditAvailable(bidirectional: Bool) {
        drainPendingOpens(bidirectional: bidirectional)
    }

    /// The transport sent enough of what was queued (see ``SessionTransport/notifyWhenUnsent(below:)``):
    /// subscriptions waiting for room start their next groups, highest priority first.
    public func sendBufferDrained() {
        drainRequested = nil
        guard phase != .closed else { return }
        let waiting = roomWaiters.compactMap { $0.value }
        roomWaiters = []
        let ordered = waiting.sorted {
            $0.priority != $1.priority ? $0.priority > $1.priority : $0.subscribeID < $1.subscribeID
        }
        for subscription in ordered { subscription.roomAvailable() }
    }

    /// A served subscription has groups to send but no room: it hears ``ServedSubscription/roomAvailable()``
    /// once the connection has sent a window's worth of what is queued.
    func waitForRoom(_ subscription: ServedSubscription, unsent: Int) {
        if !roomWaiters.contains(where: { $0.value === subscription }) {
            roomWaiters.append(WeakReference(subscription))
        }
        // Heard once the connection has sent what this subscription has beyond its window (or
        // the session is back under its bound): always below what is queued now, so a
        // notification means progress was made (no busy loop).
        let total = transport.totalUnsentBytes
        let needed = max(unsent - config.limits.subscriptionSendWindow, 1)
        let threshold = min(max(1, total - needed + 1), config.limits.maxUnsentBytes)
        if let requested = drainRequested, requested >= threshold { return }
        drainRequested = threshold
        transport.notifyWhenUnsent(below: threshold)
    }

    /// The connection ended (for any reason) without our asking.
    public func transportClosed(_ reason: SessionCloseReason) {
        teardown(reason)
    }

    // MARK: - API (session thread)

    /// Closes the session with a session code.
    public func close(_ code: SessionErrorCode = .cancel, reason: String = "") {
        guard phase != .closed else { return }
        transport.close(code: code.rawValue, reason: reason)
        teardown(.local(code, reason))
    }

    /// Asks the peer which broadcasts exist under `prefix`; `handler` gets every change.
    @discardableResult
    public func requestAnnounces(prefix: String, handler: @escaping (AnnounceEvent) -> Void) -> AnnounceRequestHandle {
        let request = RequestedAnnounce(session: context, prefix: prefix, handler: handler)
        whenReady { request.start() }
        return AnnounceRequestHandle(request: request)
    }

    /// Subscribes to a track of the peer, writing what arrives into `track` (whose
    /// info is filled from TRACK_INFO when it is nil).
    @discardableResult
    ///
    /// - Parameter sessionClosedCode: what `track` ends with if the session closes first (a relay
    ///   feeding its own subscribers passes INTERNAL, as moq-relay resets them).
    public func subscribe(
        broadcast: String, track: TrackProducer, range: SubscriptionRange = SubscriptionRange(),
        sessionClosedCode: StreamErrorCode? = .sessionClosed, onLost: ((StreamErrorCode) -> Bool)? = nil
    ) -> SubscriptionHandle {
        let id = nextSubscribeID
        nextSubscribeID += 1
        let sub = RequestedSubscription(
            session: context, id: id, broadcast: BroadcastPath.normalize(broadcast), track: track, range: range)
        sub.sessionClosedCode = sessionClosedCode
        sub.onLost = onLost
        if ownSubscriptions.count >= config.limits.maxOwnRequests {
            track.abort(.internal)
        } else {
            ownSubscriptions[id] = sub
            whenReady { sub.start() }
        }
        return SubscriptionHandle(subscription: sub)
    }

    /// Fetches one group (or a frame range of it) from the peer.
    public func fetch(
        _ request: Fetch, completion: @escaping (Result<[Frame], StreamErrorCode>) -> Void
    ) {
        let fetch = RequestedFetch(session: context, request: request, completion: completion)
        whenReady { fetch.start() }
    }

    /// Asks the peer for TRACK_INFO.
    public func trackInfo(
        broadcast: String, track: String, completion: @escaping (Result<TrackInfo, StreamErrorCode>) -> Void
    ) {
        let request = RequestedTrack(
            session: context, request: TrackRequest(broadcast: BroadcastPath.normalize(broadcast), track: track),
            completion: completion)
        whenReady { request.start() }
    }

    /// Opens a Probe stream: the peer reports its estimated bitrate and RTT.
    public func requestProbe(handler: @escaping (Probe) -> Void) {
        let probe = RequestedProbe(session: context, handler: handler)
        whenReady { probe.start() }
    }

    /// Tells the peer to go away (optionally to `uri`). Clients must send an empty URI.
    public func sendGoaway(uri: String = "") {
        // Unowned: the closures live in this core's own queues (a strong capture is a cycle).
        whenReady { [unowned self] in
            openStream(bidirectional: true) { [unowned self] stream in
                var w = WireWriter()
                w.writeVarInt(BidiStreamType.goaway.rawValue)
                w.bytes += Goaway(uri: self.transport.isClient ? "" : uri).encoded()
                self.transport.setSendOrder(stream, SendOrder.control)
                self.transport.write(stream, w.view, fin: true)
                self.handlers[stream] = DrainingStream(session: context, stream: stream)
            }
        }
    }

    // MARK: - Setup

    func sendSetup() {
        guard let stream = transport.openStream(bidirectional: false) else {
            close(.internal, reason: "no stream credit for SETUP")
            return
        }
        let setup = Setup(
            probe: config.serveProbe ? 1 : nil, path: transport.isClient ? config.path : nil,
            role: config.role, cost: config.linkCost, origin: config.hopID)
        transport.setSendOrder(stream, SendOrder.control)
        transport.write(stream, Bytes([UInt8(UniStreamType.setup.rawValue)] + setup.encoded()), fin: true)
    }

    func setupArrived(_ setup: Setup) {
        guard peerSetup == nil else {
            close(.protocolViolation, reason: "second SETUP")
            return
        }
        peerSetup = setup
        counters.setupReceived = true
        setupTimer?.cancel()
        setupTimer = nil
        phase = .ready
        // A server decides (authorises) before answering: a refused client never
        // gets our SETUP, only the CONNECTION_CLOSE.
        delegate?.sessionDidSetup(self, peer: setup)
        guard phase == .ready else { return }
        if !transport.isClient { sendSetup() }
        let early = earlyStreams
        earlyStreams = []
        for stream in early {
            handlers[stream]?.sessionReady()
            settle(stream, arrived: 0)
        }
        let deferred = deferredRequests
        deferredRequests = []
        for request in deferred { request() }
    }

    func whenReady(_ work: @escaping () -> Void) {
        switch phase {
        case .ready: work()
        case .closed: break
        default: deferredRequests.append(work)
        }
    }

    // MARK: - Streams

    struct PendingOpen {
        let open: (Int64) -> Void
        let isCancelled: () -> Bool
    }

    /// Opens a stream now, or as soon as the peer grants credit.
    func openStream(
        bidirectional: Bool, isCancelled: @escaping () -> Bool = { false }, then open: @escaping (Int64) -> Void
    ) {
        guard phase != .closed else { return }
        let queue = bidirectional ? pendingBidiOpens : pendingUniOpens
        if queue.isEmpty, let stream = transport.openStream(bidirectional: bidirectional) {
            open(stream)
            return
        }
        counters.streamCreditWaits += 1
        if bidirectional {
            pendingBidiOpens.append(PendingOpen(open: open, isCancelled: isCancelled))
        } else {
            pendingUniOpens.append(PendingOpen(open: open, isCancelled: isCancelled))
            if pendingUniOpens.count > config.limits.maxPendingGroups {
                pendingUniOpens.removeFirst()
                counters.groupsDroppedForCredit += 1
                hitLimit(.pendingGroups(config.limits.maxPendingGroups))
            }
        }
    }

    private func drainPendingOpens(bidirectional: Bool) {
        while phase != .closed {
            let queue = bidirectional ? pendingBidiOpens : pendingUniOpens
            guard let next = queue.first else { return }
            if next.isCancelled() {
                if bidirectional { pendingBidiOpens.removeFirst() } else { pendingUniOpens.removeFirst() }
                continue
            }
            guard let stream = transport.openStream(bidirectional: bidirectional) else { return }
            if bidirectional { pendingBidiOpens.removeFirst() } else { pendingUniOpens.removeFirst() }
            next.open(stream)
        }
    }

    func isPeerInitiated(_ stream: Int64) -> Bool {
        StreamID.isServerInitiated(stream) == transport.isClient
    }

    /// Resets our send side and stops the peer's, with a stream code.
    func abortStream(_ stream: Int64, _ code: StreamErrorCode, resetSend: Bool = true, stopReceive: Bool = true) {
        guard phase != .closed else { return }
        if resetSend { transport.resetStream(stream, code: code.wireValue) }
        if stopReceive { transport.stopSending(stream, code: code.wireValue) }
    }

    /// Counts and reports a limit that was hit. Repeats of the same limit are
    /// reported at most once a second so a hostile peer cannot flood the log.
    func hitLimit(_ event: SessionLimitEvent) {
        counters.limitsHit += 1
        let now = clock.now()
        guard now &- lastLimitReport >= 1_000_000_000 || lastLimitEvent != event else { return }
        lastLimitReport = now
        lastLimitEvent = event
        delegate?.session(self, didHitLimit: event)
    }

    /// Called by a stream handler that has finished its work; late events are ignored
    /// (their bytes are consumed at once). A peer's stream keeps a ``ClosedStream`` marker
    /// until the transport closes it, so that later bytes are never taken for a new stream.
    func detach(_ stream: Int64) {
        install(isPeerInitiated(stream) ? ClosedStream() : nil, on: stream)
    }

    // MARK: - Teardown

    private func teardown(_ reason: SessionCloseReason) {
        guard phase != .closed else { return }
        phase = .closed
        closeReason = reason
        setupTimer?.cancel()
        setupTimer = nil
        let all = handlers.values
        handlers = [:]
        for h in all { h.sessionClosed() }
        let subs = ownSubscriptions.values
        ownSubscriptions = [:]
        for s in subs { s.sessionClosed() }
        pendingBidiOpens = []
        pendingUniOpens = []
        deferredRequests = []
        roomWaiters = []
        delegate?.session(self, didCloseWith: reason)
    }
}

/// Cancels or updates an announce request.
public struct AnnounceRequestHandle {
    let request: RequestedAnnounce
    /// Stops receiving announcements.
    public func cancel() { request.cancel() }
}

/// Controls a subscription.
public struct SubscriptionHandle {
    let subscription: RequestedSubscription
    /// The subscribe id sent to the peer.
    public var id: UInt64 { subscription.id }
    /// Sends SUBSCRIBE_UPDATE.
    public func update(_ range: SubscriptionRange) { subscription.update(range) }
    /// Ends the subscription (CANCEL).
    public func cancel() { subscription.cancel() }
    /// Ends the subscription (CANCEL) and leaves its track open for another to feed.
    public func detach() { subscription.detach() }
}

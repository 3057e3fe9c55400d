// SPDX-License-Identifier: MIT
import MoqWire

/// What a stream handler may do with its session, instead of holding the session core: write
/// to, finish and reset streams, open new ones and take over their events, count what happened,
/// report a limit, hold a request slot, look up what the session serves and schedule work.
/// The core's tables (its handlers, held bytes, pending opens, setup state) stay out of reach.
///
/// A value type over an unowned core: a handler never outlives its session's core (the core
/// drops every handler when it closes), and copies are free. Session thread only.
struct HandlerContext {
    private unowned let core: SessionCore

    init(_ core: SessionCore) { self.core = core }

    // MARK: The session

    /// The session has closed: nothing more may be written.
    var isClosed: Bool { core.phase == .closed }
    /// The SETUP exchange completed and the session is open.
    var isReady: Bool { core.phase == .ready }
    var config: SessionConfig { core.config }
    var scheduler: any SessionScheduler { core.scheduler }
    var clock: any MoqClock { core.clock }
    /// What we offer the peer; nil answers every request as unroutable.
    var publishOrigin: (any BroadcastDirectory)? { core.publishOrigin }
    /// The peer's SETUP.
    var peerSetup: Setup? { core.peerSetup }

    /// The session's counters (for stats and tests).
    var counters: SessionCounters {
        get { core.counters }
        nonmutating _modify { yield &core.counters }
    }

    /// Requests served to the peer, by kind (``ServedRequest`` keeps them).
    var served: ServedCounts {
        get { core.served }
        nonmutating _modify { yield &core.served }
    }

    /// Broadcasts the peer announced to us, across announce streams (capped by ``SessionLimits/maxAnnouncements``).
    var announcedCount: Int {
        get { core.announcedCount }
        nonmutating _modify { yield &core.announcedCount }
    }

    /// Our subscriptions by id (group streams and datagrams find theirs here).
    var ownSubscriptions: [UInt64: RequestedSubscription] {
        get { core.ownSubscriptions }
        nonmutating _modify { yield &core.ownSubscriptions }
    }

    /// Closes the session with `code` (a protocol violation by the peer).
    func close(_ code: SessionErrorCode, reason: String) { core.close(code, reason: reason) }

    // MARK: Setup and requests before it

    /// Claims the session's one Setup stream: false when the peer already opened one.
    func claimSetupStream() -> Bool {
        guard !core.setupStreamSeen else { return false }
        core.setupStreamSeen = true
        return true
    }

    /// The peer's SETUP arrived.
    func setupArrived(_ setup: Setup) { core.setupArrived(setup) }

    /// Holds a request stream that arrived before the SETUP exchange until it completes (its
    /// handler gets ``StreamHandler/sessionReady()``); false when ``SessionLimits/maxPendingStreams``
    /// are already held (the limit is reported).
    func holdUntilReady(_ stream: Int64) -> Bool {
        let limit = core.config.limits.maxPendingStreams
        guard core.earlyStreams.count < limit else {
            core.hitLimit(.pendingStreams(limit))
            return false
        }
        core.earlyStreams.append(stream)
        return true
    }

    /// The peer sent GOAWAY (our delegate decides where to go).
    func goawayArrived(uri: String) { core.delegate?.session(core, didReceiveGoaway: uri) }

    /// Counts and reports a limit that was hit (rate-limited in the log).
    func hitLimit(_ event: SessionLimitEvent) { core.hitLimit(event) }

    /// Asks the peer for a track's info.
    func trackInfo(
        broadcast: String, track: String, completion: @escaping (Result<TrackInfo, StreamErrorCode>) -> Void
    ) {
        core.trackInfo(broadcast: broadcast, track: track, completion: completion)
    }

    /// Wakes `subscription` once the connection has sent enough of what it holds.
    func waitForRoom(_ subscription: ServedSubscription, unsent: Int) {
        core.waitForRoom(subscription, unsent: unsent)
    }

    // MARK: Streams

    /// Opens a stream now, or as soon as the peer grants credit (skipped if `isCancelled` by then).
    func openStream(
        bidirectional: Bool, isCancelled: @escaping () -> Bool = { false }, then open: @escaping (Int64) -> Void
    ) {
        core.openStream(bidirectional: bidirectional, isCancelled: isCancelled, then: open)
    }

    /// Makes `handler` receive the events of `stream` (one we opened, or one handed over).
    func install(_ handler: any StreamHandler, on stream: Int64) { core.install(handler, on: stream) }

    /// Makes `handler` receive the events of a stream we just opened, before anything arrived on it.
    func adopt(_ stream: Int64, by handler: any StreamHandler) { core.handlers[stream] = handler }

    /// Our work on `stream` is done; the peer's remaining bytes are read and dropped until it closes.
    func drain(_ stream: Int64) { core.install(DrainingStream(session: self, stream: stream), on: stream) }

    /// The handler of `stream` has finished; late events are ignored.
    func detach(_ stream: Int64) { core.detach(stream) }

    /// Resets our send side and stops the peer's, with a stream code.
    func abortStream(_ stream: Int64, _ code: StreamErrorCode, resetSend: Bool = true, stopReceive: Bool = true) {
        core.abortStream(stream, code, resetSend: resetSend, stopReceive: stopReceive)
    }

    func write(_ stream: Int64, _ data: Bytes, fin: Bool) { core.transport.write(stream, data, fin: fin) }
    func finish(_ stream: Int64) { core.transport.finish(stream) }
    func resetStream(_ stream: Int64, code: UInt64) { core.transport.resetStream(stream, code: code) }
    func setSendOrder(_ stream: Int64, _ order: Int64) { core.transport.setSendOrder(stream, order) }
    func unsentBytes(_ stream: Int64) -> Int { core.transport.unsentBytes(stream) }

    // MARK: The connection

    /// Bytes written to all streams and not yet sent.
    var totalUnsentBytes: Int { core.transport.totalUnsentBytes }
    /// The largest datagram payload the peer accepts now (0: none).
    var maxDatagramPayload: Int { core.transport.maxDatagramPayload }
    /// Sends a datagram; false when it does not fit or cannot be queued.
    func sendDatagram(_ data: Bytes) -> Bool { core.transport.sendDatagram(data) }
    /// The transport's current estimates (bandwidth, RTT).
    var transportEstimates: TransportEstimates { core.transport.transportEstimates }
}

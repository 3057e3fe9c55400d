// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire
import MoqtWire

/// The control stream: SETUP, request ids, and each message to its request.
extension MoqtSessionCore {
    func handleControl(type: UInt64, payload: Bytes) {
        counters.controlMessages += 1
        let message: ControlMessage
        do {
            message = try ControlMessage.decode(type: type, payload: payload, version: version)
        } catch {
            return close(.protocolViolation, reason: "control message 0x\(String(type, radix: 16)): \(error)")
        }
        if phase == .waitingForSetup {
            return handleSetup(message)
        }
        switch message {
        case .clientSetup, .serverSetup:
            close(.protocolViolation, reason: "a second SETUP")
        case .subscribe(let request):
            guard acceptPeerRequest(request.requestID) else { return }
            serveSubscribe(request)
        case .unsubscribe(let id):
            served[id]?.unsubscribed()
        case .subscribeOk(let ok):
            subscriptionAccepted(ok)
        case .requestUpdate(let update):
            // It takes a request id of its own, done with at once.
            guard acceptPeerRequest(update.requestID) else { return }
            peerRequestEnded()
            serveUpdate(update)
        case .requestError(let error):
            requestRefused(error)
        case .requestOk(let ok):
            // PUBLISH_NAMESPACE_OK / SUBSCRIBE_NAMESPACE_OK on the control stream: nothing waits on them.
            if let i = updatesAwaitingAnswer.firstIndex(of: ok.requestID) {
                updatesAwaitingAnswer.remove(at: i)
                counters.updatesAccepted += 1
            }
        case .publishDone(let done):
            subscriptions[done.requestID]?.publishDone(done)
        case .fetch(let request):
            guard acceptPeerRequest(request.requestID) else { return }
            serveFetch(request)
        case .fetchOk(let ok):
            // Its objects come on the fetch stream (moq-dev answers draft-16 with REQUEST_OK instead).
            guard fetches[ok.requestID] != nil || isOurEndedRequest(ok.requestID) else {
                return close(.protocolViolation, reason: "FETCH_OK for request \(ok.requestID), never asked")
            }
        case .fetchCancel(let id):
            fetchCancelled(id)  // nothing to do for one already sent or refused (the answer may cross the cancel)
        case .publishNamespace(let request):
            guard acceptPeerRequest(request.requestID) else { return }
            peerPublishedNamespace(request)
        case .publishNamespaceDone(let target):
            peerWithdrewNamespace(target)
        case .publishNamespaceCancel:
            break  // the peer no longer wants one of ours: it unsubscribes what it had
        case .subscribeNamespace(let request):
            guard version == .draft14 else {
                return close(.protocolViolation, reason: "SUBSCRIBE_NAMESPACE on the control stream (draft-16)")
            }
            guard acceptPeerRequest(request.requestID) else { return }
            serveNamespaces(request, stream: nil)
        case .unsubscribeNamespace(let target):
            stopServingNamespaces(target)
        case .namespace, .namespaceDone:
            close(.protocolViolation, reason: "NAMESPACE on the control stream")
        case .goaway(let uri):
            if !transport.isClient && !uri.isEmpty {
                return close(.protocolViolation, reason: "a client's GOAWAY with a URI")
            }
            delegate?.moqtSession(self, goaway: uri)
        case .maxRequestID(let bound):
            guard bound > peerMaxRequestID else {
                return close(
                    .protocolViolation, reason: "MAX_REQUEST_ID \(bound) does not increase \(peerMaxRequestID)")
            }
            peerMaxRequestID = bound
            grantWaitingRequests()
        case .requestsBlocked:
            grantPeerRequests()  // nothing to do unless a window opened meanwhile
        case .unsupported(let type, let requestID):
            refuseUnsupported(type: type, requestID: requestID)
        }
    }

    // MARK: SETUP

    func handleSetup(_ message: ControlMessage) {
        switch message {
        case .clientSetup(let setup) where !transport.isClient:
            if version == .draft14 && !setup.versions.contains(version.code) {
                return close(.versionNegotiationFailed, reason: "the client offers none of \(version)")
            }
            readPeerSetup(setup.parameters)
            if let path = config.connectPath {
                peerPath = path
            } else if let path = setup.parameters.bytes(SetupParameter.path) {
                guard let text = String(validating: path.array, as: UTF8.self) else {
                    return close(.malformedPath, reason: "PATH is not UTF-8")
                }
                peerPath = text
            }
            let parameters = KeyValuePairs.setup(
                maxRequestID: grantedPeerRequestID, implementation: config.implementation)
            send(
                .serverSetup(
                    ServerSetup(selectedVersion: version == .draft14 ? version.code : nil, parameters: parameters)))
            becomeReady()
        case .serverSetup(let setup) where transport.isClient:
            if version == .draft14 && setup.selectedVersion != version.code {
                return close(.versionNegotiationFailed, reason: "the server selected \(setup.selectedVersion ?? 0)")
            }
            readPeerSetup(setup.parameters)
            becomeReady()
        default:
            close(.protocolViolation, reason: "expected SETUP first")
        }
    }

    func readPeerSetup(_ parameters: KeyValuePairs) {
        peerMaxRequestID = parameters.varint(SetupParameter.maxRequestID) ?? 0
        peerSolicits = parameters[SetupParameter.solicit] != nil
        if let name = parameters.bytes(SetupParameter.implementation) {
            peerImplementation = String(decoding: name.array.prefix(256), as: UTF8.self)
        }
    }

    func becomeReady() {
        phase = .ready
        wasReady = true
        setupTimer?.cancel()
        setupTimer = nil
        // The delegate may scope what is served (a relay's grant) or close the session (no grant).
        delegate?.moqtSessionReady(self)
        guard phase == .ready else { return }
        if !peerSolicits && publishOrigin != nil { advertiseUnsolicited() }
        grantWaitingRequests()
        readStreamsHeldForSetup()
    }

    // MARK: Request ids

    /// Checks a request id the peer used: its parity and order, and under the bound we granted.
    ///
    /// Draft-14 carries every request on the control stream, so ids come exactly in sequence.
    /// Draft-16 puts SUBSCRIBE_NAMESPACE on streams of its own, and the network may deliver two
    /// streams' requests in either order: an id ahead of the next expected is taken (once) if it
    /// has the peer's parity and lies inside the granted window, and the ids it passed stay due.
    func acceptPeerRequest(_ id: UInt64) -> Bool {
        let inSequence = id == expectedPeerRequestID
        let reordered =
            version == .draft16 && id > expectedPeerRequestID && id % 2 == expectedPeerRequestID % 2
            && !peerRequestsAhead.contains(id)
        guard inSequence || reordered else {
            close(.invalidRequestID, reason: "request id \(id), expected \(expectedPeerRequestID)")
            return false
        }
        guard id < grantedPeerRequestID else {
            close(.tooManyRequests, reason: "request id \(id) at or past the granted \(grantedPeerRequestID)")
            return false
        }
        if inSequence {
            expectedPeerRequestID = id &+ 2
            // Ids that came early are no longer ahead (the set holds at most the granted window's ids).
            while peerRequestsAhead.remove(expectedPeerRequestID) != nil { expectedPeerRequestID &+= 2 }
        } else {
            peerRequestsAhead.insert(id)
        }
        openPeerRequests += 1
        return true
    }

    /// A request of the peer's ended: its id's place in the window goes back to the peer.
    func peerRequestEnded() {
        if openPeerRequests > 0 { openPeerRequests -= 1 }
        grantPeerRequests()
    }

    /// Sends MAX_REQUEST_ID when the window (open requests ≤ the configured maximum) moved.
    func grantPeerRequests() {
        guard phase == .ready, openPeerRequests <= config.maxPeerRequests else { return }
        let (room, overflow) = (config.maxPeerRequests - openPeerRequests).multipliedReportingOverflow(by: 2)
        let (bound, overflow2) = expectedPeerRequestID.addingReportingOverflow(room)
        guard !overflow, !overflow2, bound <= VarInt.max, bound > grantedPeerRequestID else { return }
        grantedPeerRequestID = bound
        send(.maxRequestID(bound))
    }

    /// Runs `start` with a request id of ours once the peer's bound allows one (queued meanwhile,
    /// up to ``MoqtSessionConfig/maxQueuedRequests``; past that, `refused` runs).
    /// Runs `start` with the next request id, now or (while the peer grants none) once one is
    /// granted; `refused` runs instead when the queue is full or the session is closed, or closes
    /// while the request waits. A queued request whose `wanted` turns false (cancelled while it
    /// waited) is dropped without taking an id: ids are consumed strictly in order, none skipped.
    func withRequestID(
        _ start: @escaping (UInt64) -> Void, wanted: @escaping () -> Bool = { true },
        refused: @escaping () -> Void
    ) {
        if phase == .ready && waitingForRequestID.isEmpty && nextRequestID < peerMaxRequestID {
            let id = nextRequestID
            nextRequestID += 2
            return start(id)
        }
        waitingForRequestID.removeAll { !$0.wanted() }  // cancelled ones hold no place in the queue
        guard phase != .closed, waitingForRequestID.count < config.maxQueuedRequests else { return refused() }
        waitingForRequestID.append(QueuedRequest(start: start, wanted: wanted, refused: refused))
    }

    /// A request waiting for the peer to grant an id.
    struct QueuedRequest {
        let start: (UInt64) -> Void
        /// False once the request was cancelled while it waited.
        let wanted: () -> Bool
        /// Told when the session closes before an id came.
        let refused: () -> Void
    }

    func grantWaitingRequests() {
        guard phase == .ready else { return }
        waitingForRequestID.removeAll { !$0.wanted() }
        while !waitingForRequestID.isEmpty && nextRequestID < peerMaxRequestID {
            let request = waitingForRequestID.removeFirst()
            guard request.wanted() else { continue }
            let id = nextRequestID
            nextRequestID += 2
            request.start(id)
        }
    }

    /// PUBLISH and TRACK_STATUS: refused with NOT_SUPPORTED (their id is checked as any
    /// request's). A reply to a request we never make is a protocol violation.
    func refuseUnsupported(type: UInt64, requestID: UInt64?) {
        let kinds: [UInt64: RequestKind] = [0x1D: .publish, 0x0D: .trackStatus]
        guard let kind = kinds[type], let id = requestID else {
            return close(.protocolViolation, reason: "message 0x\(String(type, radix: 16)) answers nothing we asked")
        }
        guard acceptPeerRequest(id) else { return }
        peerRequestEnded()
        counters.unsupportedRequests += 1
        send(
            .requestError(
                RequestError(
                    kind: version == .draft14 ? kind : nil, requestID: id, code: MoqtCode.notSupported,
                    reason: "not supported by SwiftMoQ")))
    }
}

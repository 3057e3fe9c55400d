// SPDX-License-Identifier: MIT

/// The kinds of request a peer can make us serve, each capped per session by a
/// ``SessionLimits`` field.
enum ServedKind: CaseIterable {
    case subscription, trackRequest, fetch, announce, probe

    /// The cap for this kind.
    func limit(_ limits: SessionLimits) -> Int {
        switch self {
        case .subscription: limits.maxServedSubscriptions
        case .trackRequest: limits.maxServedTrackRequests
        case .fetch: limits.maxServedFetches
        case .announce: limits.maxServedAnnounces
        case .probe: limits.maxServedProbes
        }
    }

    /// What is reported when the cap is reached.
    func limitEvent(_ limit: Int) -> SessionLimitEvent {
        switch self {
        case .subscription: .servedSubscriptions(limit)
        case .trackRequest: .servedTrackRequests(limit)
        case .fetch: .servedFetches(limit)
        case .announce: .servedAnnounces(limit)
        case .probe: .servedProbes(limit)
        }
    }
}

/// The requests being served, by kind.
struct ServedCounts {
    private var counts: [Int] = Array(repeating: 0, count: ServedKind.allCases.count)

    subscript(kind: ServedKind) -> Int {
        get { counts[index(kind)] }
        set { counts[index(kind)] = newValue }
    }

    private func index(_ kind: ServedKind) -> Int {
        switch kind {
        case .subscription: 0
        case .trackRequest: 1
        case .fetch: 2
        case .announce: 3
        case .probe: 4
        }
    }
}

/// One served request's hold on its session: a slot under its kind's limit while it is open,
/// an observer on what it serves, and one way out that gives both back exactly once.
///
/// Every served handler repeats the same shape — decode the request, take a slot, look up the
/// broadcast, observe a track or the origin, then finish (FIN or reset, then drain) or let go
/// when the session closes. The bookkeeping of that shape lives here, once.
struct ServedRequest {
    /// Where the request stands.
    enum Phase: Equatable {
        /// Not admitted yet (still decoding, or refused).
        case pending
        /// Holding a slot.
        case admitted
        /// Released: nothing more happens on this request.
        case done
    }

    let kind: ServedKind
    private(set) var phase = Phase.pending
    private var observation: (track: TrackProducer, token: UInt64, trigger: PumpTrigger)?

    init(_ kind: ServedKind) { self.kind = kind }

    var isDone: Bool { phase == .done }

    /// Takes a slot. At the limit, counts a refusal, reports the limit and returns false.
    mutating func admit(_ session: HandlerContext) -> Bool {
        guard phase == .pending else { return phase == .admitted }
        let limit = kind.limit(session.config.limits)
        guard session.served[kind] < limit else {
            session.counters.refusedRequests += 1
            session.hitLimit(kind.limitEvent(limit))
            return false
        }
        session.served[kind] += 1
        phase = .admitted
        return true
    }

    /// Pumps `target` on the session thread (coalesced) whenever `track` changes, until released.
    mutating func observe(_ track: TrackProducer, pumping target: any Pumpable, on session: HandlerContext) {
        if let old = observation { old.track.removeObserver(old.token) }
        let trigger = PumpTrigger(scheduler: session.scheduler, target: target)
        observation = (track, track.addObserver(trigger), trigger)
    }

    /// Gives back the slot and the observer. Returns false when already released.
    @discardableResult
    mutating func release(_ session: HandlerContext) -> Bool {
        guard phase != .done else { return false }
        if phase == .admitted { session.served[kind] -= 1 }
        phase = .done
        if let old = observation { old.track.removeObserver(old.token) }
        observation = nil
        return true
    }
}

// SPDX-License-Identifier: MIT
import Dispatch
import FoundationEssentials
import MoqQUIC
import MoqSession
import MoqSync

/// A session the relay holds, as `/metrics` and `/sessions` describe it.
struct TrackedSession: Sendable {
    enum Kind: String, Sendable {
        /// A publisher or subscriber.
        case client
        /// Another relay's link, accepted with a peer grant.
        case peer
        /// A link this relay dialled (``MoqRelay/Configuration/peers``, the upstream).
        case link
    }

    let id: UInt64
    let session: any ObservedSession
    let kind: Kind
    /// The peer's address, or the link's URL (without its query).
    let peer: String
    let root: String
    /// The hop id the peer declared in SETUP (another relay's `--cluster-id`), when it did.
    let hop: UInt64?
    let since: ContinuousClock.Instant
}

/// What the relay's sessions did, summed: the closed ones' final counters, plus the open ones'
/// when asked.
struct SessionTotals: Sendable {
    var counters = SessionCounters()
    var quicBytesSent: UInt64 = 0
    var quicBytesReceived: UInt64 = 0
    var packetsLost: UInt64 = 0

    mutating func add(_ stats: SessionStats) {
        let c = stats.counters
        counters.groupsSent &+= c.groupsSent
        counters.groupsReceived &+= c.groupsReceived
        counters.framesSent &+= c.framesSent
        counters.framesReceived &+= c.framesReceived
        counters.bytesSent &+= c.bytesSent
        counters.bytesReceived &+= c.bytesReceived
        counters.groupsResetAsOld &+= c.groupsResetAsOld
        counters.groupsDroppedForCredit &+= c.groupsDroppedForCredit
        counters.groupsDroppedForBudget &+= c.groupsDroppedForBudget
        counters.malformedStreams &+= c.malformedStreams
        counters.malformedDatagrams &+= c.malformedDatagrams
        counters.refusedRequests &+= c.refusedRequests
        counters.limitsHit &+= c.limitsHit
        counters.datagramsSent &+= c.datagramsSent
        counters.datagramsReceived &+= c.datagramsReceived
        counters.partialGroupsRefused &+= c.partialGroupsRefused
        quicBytesSent &+= stats.bytesSent
        quicBytesReceived &+= stats.bytesReceived
        packetsLost &+= stats.packetsLost
    }
}

extension MoqRelay {
    /// How long a scrape waits for the loops to report their sessions' counters.
    static let scrapeTimeout = DispatchTimeInterval.seconds(1)

    /// Every open session's statistics, asked of their loops from this (non-pool) thread.
    func gatherStats(_ sessions: [TrackedSession]) -> [UInt64: SessionStats] {
        let results = Lock<[UInt64: SessionStats]>([:])
        let done = DispatchSemaphore(value: 0)
        for tracked in sessions {
            let id = tracked.id
            tracked.session.stats { stats in
                results.withLock { $0[id] = stats }
                done.signal()
            }
        }
        let deadline = DispatchTime.now() + Self.scrapeTimeout
        for _ in sessions where done.wait(timeout: deadline) == .timedOut { break }
        return results.withLock { $0 }
    }

    /// Whether `head` may read `/metrics` and `/sessions`: nil when it may, else the refusal.
    func refuseObservability(_ head: HTTPRequestHead) -> HTTPResponse? {
        guard configuration.serveMetrics else { return HTTPResponse(status: 404, body: "Not found\n") }
        guard let token = configuration.metricsToken else { return nil }
        let bearer = head.headers["authorization"].flatMap { value -> String? in
            let parts = value.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
        }
        guard let given = bearer ?? head.query["token"], Crypto.constantTimeEqual(Array(given.utf8), Array(token.utf8))
        else { return HTTPResponse(status: 401, body: "a token is required: Authorization: Bearer <token>\n") }
        return nil
    }

    /// `/metrics`: the relay's state in Prometheus' text format.
    func metricsText() -> String {
        let open = trackedSessions
        let stats = gatherStats(open)
        var totals = closedTotals
        for s in stats.values { totals.add(s) }
        let c = totals.counters
        var p = PrometheusText()
        let kinds: [TrackedSession.Kind] = [.client, .peer, .link]
        p.family(
            "swiftmoq_relay_sessions", .gauge, "Open sessions, by kind (client, accepted peer link, dialled link).",
            kinds.map { kind in ([("kind", kind.rawValue)], Double(open.filter { $0.kind == kind }.count)) })
        p.single(
            "swiftmoq_relay_sessions_accepted_total", .counter, "Sessions accepted since start.",
            Double(counts.withLock { $0.accepted }))
        p.single(
            "swiftmoq_relay_sessions_refused_total", .counter, "Sessions refused (authorisation) since start.",
            Double(counts.withLock { $0.refused }))
        p.single(
            "swiftmoq_relay_broadcasts", .gauge, "Broadcasts offered (one per path, whatever its routes).",
            Double(origin.paths.count))
        p.single("swiftmoq_relay_routes", .gauge, "Routes known to all broadcasts.", Double(routes.routeCount))
        p.single(
            "swiftmoq_relay_upstream_subscriptions", .gauge,
            "Tracks pulled from a publisher or another relay (one per track, whatever its subscribers).",
            Double(upstreamSubscriptionCount))
        let links = self.links
        let up = linkIngests.withLock { Set($0.keys) }
        p.family(
            "swiftmoq_relay_peer_link_up", .gauge,
            "Whether each dialled link's session is open (1) or being redialled (0).",
            links.enumerated().map { index, link in
                ([("url", link.url.redacted)], up.contains(index) ? 1 : 0)
            })
        p.single("swiftmoq_relay_cache_bytes", .gauge, "Bytes of groups cached across all tracks.", Double(cache.bytes))
        p.family(
            "swiftmoq_relay_payload_bytes_total", .counter, "Frame payload bytes, by direction.",
            [([("direction", "in")], Double(c.bytesReceived)), ([("direction", "out")], Double(c.bytesSent))])
        p.family(
            "swiftmoq_relay_frames_total", .counter, "Frames, by direction.",
            [([("direction", "in")], Double(c.framesReceived)), ([("direction", "out")], Double(c.framesSent))])
        p.family(
            "swiftmoq_relay_groups_total", .counter, "Groups, by direction.",
            [([("direction", "in")], Double(c.groupsReceived)), ([("direction", "out")], Double(c.groupsSent))])
        p.family(
            "swiftmoq_relay_datagrams_total", .counter, "Datagram groups, by direction.",
            [([("direction", "in")], Double(c.datagramsReceived)), ([("direction", "out")], Double(c.datagramsSent))])
        p.family(
            "swiftmoq_relay_quic_bytes_total", .counter, "QUIC bytes on the wire, by direction.",
            [
                ([("direction", "in")], Double(totals.quicBytesReceived)),
                ([("direction", "out")], Double(totals.quicBytesSent)),
            ])
        p.single(
            "swiftmoq_relay_packets_lost_total", .counter, "QUIC packets declared lost.", Double(totals.packetsLost))
        p.family(
            "swiftmoq_relay_groups_dropped_total", .counter,
            "Groups not delivered to a subscriber, by reason: older than its latency budget when sent (too_old), no stream credit in time (no_credit), out of its budget before a stream opened (over_budget).",
            [
                ([("reason", "too_old")], Double(c.groupsResetAsOld)),
                ([("reason", "no_credit")], Double(c.groupsDroppedForCredit)),
                ([("reason", "over_budget")], Double(c.groupsDroppedForBudget)),
            ])
        p.family(
            "swiftmoq_relay_refused_total", .counter, "What peers sent that was refused, by reason.",
            [
                ([("reason", "request")], Double(c.refusedRequests)),
                ([("reason", "malformed_stream")], Double(c.malformedStreams)),
                ([("reason", "malformed_datagram")], Double(c.malformedDatagrams)),
                ([("reason", "partial_group")], Double(c.partialGroupsRefused)),
                ([("reason", "limit")], Double(c.limitsHit)),
            ])
        let loops = server.loops.enumerated()
        p.family(
            "swiftmoq_relay_loop_cpu_seconds_total", .counter, "CPU time of each event loop's thread.",
            loops.map { i, loop in ([("loop", "\(i)")], loop.cpuTime.map { Double($0.nanoseconds) / 1e9 } ?? 0) })
        p.family(
            "swiftmoq_relay_loop_queue_depth", .gauge, "Work handed to each event loop and not run yet.",
            loops.map { i, loop in ([("loop", "\(i)")], Double(loop.pendingWork)) })
        p.family(
            "swiftmoq_relay_loop_sessions", .gauge, "Open sessions accepted on each event loop.",
            loops.map { i, loop in ([("loop", "\(i)")], Double(open.filter { $0.session.loop === loop }.count)) })
        return p.text
    }

    /// `/sessions`: the open sessions as JSON, one object each.
    func sessionsJSON() -> String {
        struct Entry: Encodable {
            var id: UInt64
            var kind: String
            var peer: String
            var root: String
            var hop: UInt64?
            var transport: String
            var `protocol`: String
            var connected_s: Double
            var rtt_us: UInt64
            var send_rate_bps: UInt64
            var bytes_in: UInt64
            var bytes_out: UInt64
            var frames_in: UInt64
            var frames_out: UInt64
            var groups_dropped: UInt64
        }
        let open = trackedSessions
        let stats = gatherStats(open)
        let now = ContinuousClock.now
        let entries = open.map { t -> Entry in
            let s = stats[t.id]
            let c = s?.counters ?? SessionCounters()
            let age = now - t.since
            return Entry(
                id: t.id, kind: t.kind.rawValue, peer: t.peer, root: t.root, hop: t.hop,
                transport: t.session.binding.rawValue, protocol: t.session.protocolVersion,
                connected_s: Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18,
                rtt_us: s?.rttMicros ?? 0, send_rate_bps: s?.sendRateBps ?? 0, bytes_in: c.bytesReceived,
                bytes_out: c.bytesSent, frames_in: c.framesReceived, frames_out: c.framesSent,
                groups_dropped: c.groupsResetAsOld &+ c.groupsDroppedForCredit &+ c.groupsDroppedForBudget)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return ((try? encoder.encode(entries)).map { String(decoding: $0, as: UTF8.self) } ?? "[]") + "\n"
    }
}

// SPDX-License-Identifier: MIT
import MoqWire

/// Our Announce stream to the peer: which broadcasts exist under a prefix.
final class RequestedAnnounce: StreamHandler {
    let session: HandlerContext
    let prefix: String
    private let handler: (AnnounceEvent) -> Void
    private var stream: Int64?
    private var buffer = StreamBuffer()
    var bufferedBytes: Int { buffer.buffered }
    private var ok: AnnounceOk?
    /// Announced paths by announce id.
    private var active: [UInt64: String] = [:]
    /// Ids not reported as active: their route is too long to use (see ``deliver(id:path:route:)``).
    private var suppressed = Set<UInt64>()
    private var nextID: UInt64 = 0
    private var done = false

    init(session: HandlerContext, prefix: String, handler: @escaping (AnnounceEvent) -> Void) {
        self.session = session
        self.prefix = BroadcastPath.normalize(prefix)
        self.handler = handler
    }

    func start() {
        session.openStream(bidirectional: true, isCancelled: { [weak self] in self?.done ?? true }) { [self] stream in
            guard !done else {
                session.abortStream(stream, .cancel)
                return
            }
            self.stream = stream
            session.adopt(stream, by: self)
            session.setSendOrder(stream, SendOrder.control)
            session.write(
                stream, Bytes([UInt8(BidiStreamType.announce.rawValue)] + AnnounceRequest(prefix: prefix).encoded()),
                fin: false)
        }
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        buffer.append(data)
        do {
            if ok == nil {
                guard let first = try buffer.next(AnnounceOk.self) else {
                    if fin { end(nil) }
                    return
                }
                ok = first
            }
            while !done, let message = try buffer.nextAnnouncement() { apply(message) }
        } catch {
            session.counters.malformedStreams += 1
            if let stream { session.abortStream(stream, .malformedTrack) }
            return end(.malformedTrack)
        }
        if fin { end(nil) }
    }

    private func apply(_ message: Announcement) {
        guard !done, let ok else { return }
        switch message {
        case .start(let suffix, let route):
            let id = nextID
            nextID += 1
            guard session.announcedCount < session.config.limits.maxAnnouncements else {
                // A peer announcing more broadcasts than a session may hold: stop listening to it.
                session.hitLimit(.announcements(session.config.limits.maxAnnouncements))
                if let stream { session.abortStream(stream, .internal) }
                return end(.internal)
            }
            let path = BroadcastPath.join(prefix, suffix)
            active[id] = path
            session.announcedCount += 1
            suppressed.insert(id)  // not reported yet
            deliver(id: id, path: path, route: received(route, via: ok.hopID))
        case .update(let id, let route):
            guard let path = active[id] else { return }
            deliver(id: id, path: path, route: received(route, via: ok.hopID))
        case .end(let id):
            guard let path = active.removeValue(forKey: id) else { return }
            session.announcedCount -= 1
            if suppressed.remove(id) == nil { handler(.ended(path: path)) }
        case .unknown:
            break
        }
    }

    /// Reports a route, unless it has more hops than a peer accepts (32): such a route cannot
    /// be announced any further and is treated as unreachable (a loop or a broken mesh).
    private func deliver(id: UInt64, path: String, route: AnnounceRoute) {
        if route.hops.count > WireLimits.maxHops {
            // Reported as gone if it had been reported at all.
            if suppressed.insert(id).inserted { handler(.ended(path: path)) }
            return
        }
        suppressed.remove(id)
        handler(.active(path: path, route: route))
    }

    /// The route as seen from here: the announcer's hop appended, link cost added.
    private func received(_ route: AnnounceRoute, via hop: UInt64) -> AnnounceRoute {
        var r = route
        if hop != 0 { r.hops.append(hop) }
        // Saturating: a peer may announce a cost at the varint ceiling (2^62 − 1).
        let cost = session.config.linkCost(peer: session.peerSetup)
        r.costWarm = VarInt.saturatingAdd(r.costWarm, cost)
        r.costCold = VarInt.saturatingAdd(r.costCold, cost)
        return r
    }

    func peerReset(wireCode: UInt64) { end(StreamErrorCode(wireValue: wireCode) ?? .cancel) }

    private func end(_ code: StreamErrorCode?) {
        guard !done else { return }
        done = true
        releaseAll()
        if let stream {
            if code == nil { session.finish(stream) }
            session.detach(stream)
        }
        handler(.closed(code))
    }

    func cancel() {
        guard !done else { return }
        if let stream { session.abortStream(stream, .cancel) }
        end(.cancel)
    }

    func sessionClosed() {
        guard !done else { return }
        done = true
        releaseAll()
        handler(.closed(.sessionClosed))
    }

    /// Every broadcast of this stream is gone.
    private func releaseAll() {
        session.announcedCount -= active.count
        let visible = active.filter { !suppressed.contains($0.key) }.values.sorted()
        active = [:]
        suppressed = []
        for path in visible { handler(.ended(path: path)) }
    }
}

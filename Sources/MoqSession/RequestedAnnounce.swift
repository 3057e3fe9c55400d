// SPDX-License-Identifier: MIT
import MoqWire

/// Our Announce stream to the peer: which broadcasts exist under a prefix.
final class RequestedAnnounce: StreamHandler {
    unowned let session: SessionCore
    let prefix: String
    private let handler: (AnnounceEvent) -> Void
    private var stream: Int64?
    private var buffer = StreamBuffer()
    private var ok: AnnounceOk?
    /// Announced paths by announce id.
    private var active: [UInt64: String] = [:]
    private var nextID: UInt64 = 0
    private var done = false

    init(session: SessionCore, prefix: String, handler: @escaping (AnnounceEvent) -> Void) {
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
            session.handlers[stream] = self
            session.transport.setSendOrder(stream, SendOrder.control)
            session.transport.write(
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
            while let message = try buffer.nextAnnouncement() { apply(message) }
        } catch {
            session.counters.malformedStreams += 1
            if let stream { session.abortStream(stream, .malformedTrack) }
            return end(.malformedTrack)
        }
        if fin { end(nil) }
    }

    private func apply(_ message: Announcement) {
        guard let ok else { return }
        switch message {
        case .start(let suffix, let route):
            let id = nextID
            nextID += 1
            let path = BroadcastPath.join(prefix, suffix)
            active[id] = path
            handler(.active(path: path, route: received(route, via: ok.hopID)))
        case .update(let id, let route):
            guard let path = active[id] else { return }
            handler(.active(path: path, route: received(route, via: ok.hopID)))
        case .end(let id):
            guard let path = active.removeValue(forKey: id) else { return }
            handler(.ended(path: path))
        case .unknown:
            break
        }
    }

    /// The route as seen from here: the announcer's hop appended, link cost added.
    private func received(_ route: AnnounceRoute, via hop: UInt64) -> AnnounceRoute {
        var r = route
        if hop != 0 { r.hops.append(hop) }
        r.costWarm &+= session.config.linkCost
        r.costCold &+= session.config.linkCost
        return r
    }

    func peerReset(wireCode: UInt64) { end(StreamErrorCode(wireValue: wireCode) ?? .cancel) }

    private func end(_ code: StreamErrorCode?) {
        guard !done else { return }
        done = true
        for path in active.values.sorted() { handler(.ended(path: path)) }
        active = [:]
        if let stream {
            if code == nil { session.transport.finish(stream) }
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
        for path in active.values.sorted() { handler(.ended(path: path)) }
        active = [:]
        handler(.closed(.sessionClosed))
    }
}

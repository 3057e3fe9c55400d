// SPDX-License-Identifier: MIT
import MoqSync
import MoqWire
import Synchronization

/// An Announce stream the peer opened: we tell it which of our broadcasts exist
/// under its prefix, then every change, until it closes the stream.
final class ServedAnnounce: StreamHandler {
    let session: HandlerContext
    let stream: Int64
    private var buffer: StreamBuffer
    var bufferedBytes: Int { buffer.buffered }
    private var prefix: String?
    private var observation: UInt64?
    private var directory: (any BroadcastDirectory)?
    /// Announce ids by full path; ids count STARTs on this stream from 0.
    private var active: [ByteKey: UInt64] = [:]
    private var nextID: UInt64 = 0
    /// Counted against ``SessionLimits/maxServedAnnounces`` until stopped.
    private var served = ServedRequest(.announce)
    private var done: Bool { served.isDone }

    init(session: HandlerContext, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        self.buffer = buffer
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        buffer.append(data)
        do {
            if prefix == nil, let request = try buffer.next(AnnounceRequest.self) {
                begin(prefix: request.prefix)
            }
            if prefix != nil, buffer.buffered > 0 {
                // Nothing else is defined on this stream from the subscriber.
                throw DecodeError.trailingBytes(buffer.buffered)
            }
        } catch {
            session.counters.malformedStreams += 1
            return stop(.malformedTrack)
        }
        if fin { stop(nil) }
    }

    func peerReset(wireCode: UInt64) { stop(.cancel) }
    func peerStopSending(wireCode: UInt64) {
        guard StreamErrorCode(wireValue: wireCode) != nil else { return }
        stop(.cancel)
    }

    private func begin(prefix: String) {
        guard served.admit(session) else { return stop(.internal) }
        let normalized = BroadcastPath.normalize(prefix)
        self.prefix = normalized
        session.setSendOrder(stream, SendOrder.control)
        guard let origin = session.publishOrigin else {
            write(AnnounceOk(hopID: session.config.hopID, activeCount: 0).encoded())
            return
        }
        let scheduler = session.scheduler
        let box = WeakReference(self)
        let (token, current) = origin.observe(prefix: normalized) { event in
            scheduler.execute { box.value?.originChanged(event) }
        }
        observation = token
        directory = origin
        let visible = current.filter { isVisible(path: $0.path, route: $0.route) }
        var out = AnnounceOk(hopID: session.config.hopID, activeCount: UInt64(visible.count)).encoded()
        for item in visible { out += start(path: item.path, route: item.route) }
        write(out)
    }

    /// Hidden (dot) segments below the prefix and routes through the peer itself are not announced.
    private func isVisible(path: String, route: AnnounceRoute) -> Bool {
        guard let prefix, let suffix = BroadcastPath.strip(prefix: prefix, from: path) else { return false }
        if BroadcastPath.isHidden(suffix: suffix) { return false }
        if route.hops.count > WireLimits.maxHops { return false }  // the peer would refuse it
        if let peerHop = session.peerSetup?.origin, peerHop != 0, route.hops.contains(peerHop) { return false }
        return true
    }

    private func start(path: String, route: AnnounceRoute) -> [UInt8] {
        let id = nextID
        nextID += 1
        active[ByteKey(path)] = id
        let suffix = BroadcastPath.strip(prefix: prefix ?? "", from: path) ?? path
        return Announcement.start(suffix: suffix, route: route).encoded()
    }

    private func originChanged(_ event: OriginEvent) {
        guard !done, session.isReady else { return }
        switch event {
        case .announced(let path, let route):
            guard isVisible(path: path, route: route) else {
                // A route that became unusable (e.g. too long) ends what was announced.
                if let id = active.removeValue(forKey: ByteKey(path)) { write(Announcement.end(id: id).encoded()) }
                return
            }
            if let id = active[ByteKey(path)] {
                write(Announcement.update(id: id, route: route).encoded())
            } else {
                write(start(path: path, route: route))
            }
        case .unannounced(let path):
            guard let id = active.removeValue(forKey: ByteKey(path)) else { return }
            write(Announcement.end(id: id).encoded())
        }
    }

    private func write(_ bytes: [UInt8]) {
        guard !done else { return }
        session.write(stream, Bytes(bytes), fin: false)
        let limit = session.config.limits.maxControlBacklogBytes
        if session.unsentBytes(stream) > limit {
            // A watcher that does not read: its backlog would grow with every change.
            session.hitLimit(.controlBacklog(limit))
            stop(.tooFarBehind)
        }
    }

    private func stop(_ code: StreamErrorCode?) {
        guard !done else { return }
        cleanup()
        if let code {
            session.abortStream(stream, code)
        } else {
            session.finish(stream)
        }
        session.detach(stream)
    }

    private func cleanup() {
        served.release(session)
        if let token = observation { directory?.stopObserving(token) }
        observation = nil
    }

    func sessionClosed() {
        guard !done else { return }
        cleanup()
    }
}

// SPDX-License-Identifier: MIT
import MoqWire

/// A FETCH from the peer: the frames of one cached group, then FIN (following the
/// group while it is still open). Unknown groups are reset with NOT_FOUND.
final class ServedFetch: StreamHandler, Pumpable {
    let session: HandlerContext
    let stream: Int64
    private var buffer: StreamBuffer
    var bufferedBytes: Int { buffer.buffered }
    private var request: Fetch?
    private var track: TrackProducer?
    private var group: GroupState?
    private var nextFrame = 0
    private var lastTimestamp: UInt64 = 0
    /// Counted against ``SessionLimits/maxServedFetches`` until finished.
    private var served = ServedRequest(.fetch)
    private var done: Bool { served.isDone }

    init(session: HandlerContext, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        self.buffer = buffer
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done, request == nil else { return }
        buffer.append(data)
        do {
            guard let request = try buffer.next(Fetch.self) else {
                if fin { finish(.cancel) }
                return
            }
            self.request = request
            session.setSendOrder(
                stream, SendOrder.group(priority: request.priority, subscribeID: 0, sequence: request.group))
            guard served.admit(session) else { return finish(.internal) }
            guard let broadcast = session.publishOrigin?.broadcast(request.broadcast) else {
                session.counters.refusedRequests += 1
                return finish(.unroutable)
            }
            // FETCH is served from what is cached: it never starts a subscription upstream.
            guard let track = broadcast.existingTrack(request.track), let group = track.group(sequence: request.group)
            else {
                session.counters.refusedRequests += 1
                return finish(.notFound)
            }
            self.track = track
            self.group = group
            nextFrame = Int(clamping: request.frameStart)
            served.observe(track, pumping: self, on: session)
            pump()
        } catch {
            session.counters.malformedStreams += 1
            finish(.malformedTrack)
        }
    }

    func pump() {
        guard !done, let track, let group, let request else { return }
        let (frames, status) = track.frames(of: group, from: nextFrame)
        for frame in frames {
            if let end = request.frameEnd, UInt64(nextFrame) > end { break }
            guard let header = frame.encodedHeader(previous: lastTimestamp) else { return finish(.timestampMismatch) }
            session.write(stream, Bytes(header), fin: false)
            if !frame.payload.isEmpty { session.write(stream, frame.payload, fin: false) }
            lastTimestamp = frame.timestamp
            nextFrame += 1
        }
        let reachedEnd = request.frameEnd.map { UInt64(nextFrame) > $0 } ?? false
        switch status {
        case .aborted(let code) where !reachedEnd: finish(code)
        case .finished where nextFrame >= track.frameCount(of: group), _ where reachedEnd:
            session.finish(stream)
            finish(nil)
        default: break
        }
    }

    func peerStopSending(wireCode: UInt64) { finish(.cancel) }

    private func finish(_ code: StreamErrorCode?) {
        guard served.release(session) else { return }
        if let code { session.abortStream(stream, code) }
        session.drain(stream)
    }

    func sessionClosed() { served.release(session) }
}

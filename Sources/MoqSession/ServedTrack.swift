// SPDX-License-Identifier: MIT
import MoqWire

/// A TRACK request from the peer: answer TRACK_INFO and FIN, waiting for the info
/// when a relay does not know it yet; reset with UNROUTABLE / NOT_FOUND otherwise.
final class ServedTrack: StreamHandler, Pumpable {
    let session: HandlerContext
    let stream: Int64
    private var buffer: StreamBuffer
    var bufferedBytes: Int { buffer.buffered }
    private var track: TrackProducer?
    /// Counted against ``SessionLimits/maxServedTrackRequests`` until finished.
    private var request = ServedRequest(.trackRequest)
    private var done: Bool { request.isDone }

    init(session: HandlerContext, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        self.buffer = buffer
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done, track == nil else { return }
        buffer.append(data)
        do {
            guard let request = try buffer.next(TrackRequest.self) else {
                if fin { finish(.cancel) }
                return
            }
            session.setSendOrder(stream, SendOrder.control)
            guard self.request.admit(session) else { return finish(.internal) }
            guard let broadcast = session.publishOrigin?.broadcast(request.broadcast) else {
                session.counters.refusedRequests += 1
                return finish(.unroutable)
            }
            guard let track = broadcast.track(request.track) else {
                session.counters.refusedRequests += 1
                return finish(.notFound)
            }
            self.track = track
            self.request.observe(track, pumping: self, on: session)
            pump()
        } catch {
            session.counters.malformedStreams += 1
            finish(.malformedTrack)
        }
    }

    func pump() {
        guard !done, let track else { return }
        if case .aborted(let code)? = track.end { return finish(code) }
        guard let info = track.info else { return }
        session.write(stream, Bytes(info.encoded()), fin: true)
        finish(nil)
    }

    func peerReset(wireCode: UInt64) {
        // The Rust subscriber resets its send side with CANCEL after asking: harmless.
        if track == nil { finish(.cancel) }
    }

    func peerStopSending(wireCode: UInt64) { finish(.cancel) }

    private func finish(_ code: StreamErrorCode?) {
        guard request.release(session) else { return }
        if let code { session.abortStream(stream, code) }
        session.drain(stream)
    }

    func sessionClosed() { request.release(session) }
}

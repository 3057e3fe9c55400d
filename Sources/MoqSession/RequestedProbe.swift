// SPDX-License-Identifier: MIT
import MoqWire

/// Our Probe stream: we write only its type and read the peer's reports.
final class RequestedProbe: StreamHandler {
    let session: HandlerContext
    private let handler: (Probe) -> Void
    private var stream: Int64?
    private var buffer = StreamBuffer()
    var bufferedBytes: Int { buffer.buffered }
    private var done = false

    init(session: HandlerContext, handler: @escaping (Probe) -> Void) {
        self.session = session
        self.handler = handler
    }

    func start() {
        session.openStream(bidirectional: true, isCancelled: { [weak self] in self?.done ?? true }) { [self] stream in
            self.stream = stream
            session.adopt(stream, by: self)
            session.setSendOrder(stream, SendOrder.control)
            // Only the stream type: any further byte is malformed for the peer.
            session.write(stream, Bytes([UInt8(BidiStreamType.probe.rawValue)]), fin: false)
        }
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        buffer.append(data)
        do {
            while let report = try buffer.next(Probe.self) { handler(report) }
        } catch {
            session.counters.malformedStreams += 1
            if let stream { session.abortStream(stream, .malformedTrack) }
            return stop()
        }
        if fin { stop() }
    }

    func peerReset(wireCode: UInt64) { stop() }

    private func stop() {
        guard !done else { return }
        done = true
        if let stream { session.detach(stream) }
    }

    func sessionClosed() { done = true }
}

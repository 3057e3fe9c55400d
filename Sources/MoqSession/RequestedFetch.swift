// SPDX-License-Identifier: MIT
import MoqWire

/// Our FETCH: the reply is frames until FIN, or a reset with a code.
final class RequestedFetch: StreamHandler {
    let session: HandlerContext
    let request: Fetch
    private let completion: (Result<[Frame], StreamErrorCode>) -> Void
    private var stream: Int64?
    private var decoder: FrameDecoder
    private var frames: [Frame] = []
    private var frameBytes = 0
    private var done = false
    /// The reply is kept until FIN: all of it counts against the session's incoming budget.
    var bufferedBytes: Int { done ? 0 : decoder.bufferedBytes + frameBytes }
    var holdsCredit: Bool { false }

    init(session: HandlerContext, request: Fetch, completion: @escaping (Result<[Frame], StreamErrorCode>) -> Void) {
        self.session = session
        var normalized = request
        normalized.broadcast = BroadcastPath.normalize(request.broadcast)
        self.request = normalized
        self.completion = completion
        decoder = FrameDecoder(expectHeader: false, frameLimit: session.config.limits.maxFrameBytes)
    }

    func start() {
        session.openStream(bidirectional: true, isCancelled: { [weak self] in self?.done ?? true }) { [self] stream in
            self.stream = stream
            session.adopt(stream, by: self)
            session.setSendOrder(stream, SendOrder.control)
            // Kept open until the reply ends (an early FIN reads as a cancellation).
            session.write(
                stream, Bytes([UInt8(BidiStreamType.fetch.rawValue)] + request.encoded()), fin: false)
        }
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        do {
            for event in try decoder.feed(data, fin: fin) {
                if case .frame(let frame) = event {
                    frames.append(frame)
                    frameBytes += frame.payload.count
                }
            }
            if fin { finish(.success(frames)) }
        } catch {
            session.counters.malformedStreams += 1
            if let stream { session.abortStream(stream, error.streamCode, resetSend: false) }
            finish(.failure(error.streamCode))
        }
    }

    func peerReset(wireCode: UInt64) { finish(.failure(StreamErrorCode(wireValue: wireCode) ?? .internal)) }

    private func finish(_ result: Result<[Frame], StreamErrorCode>) {
        guard !done else { return }
        done = true
        if let stream {
            if case .success = result, !session.isClosed { session.finish(stream) }
            session.detach(stream)
        }
        completion(result)
    }

    func sessionClosed() { finish(.failure(.sessionClosed)) }
}

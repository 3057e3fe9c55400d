// SPDX-License-Identifier: MIT
import MoqWire

/// Our TRACK request: the answer is TRACK_INFO (then FIN), or a reset with a code.
final class RequestedTrack: StreamHandler {
    let session: HandlerContext
    let request: TrackRequest
    private let completion: (Result<TrackInfo, StreamErrorCode>) -> Void
    private var stream: Int64?
    private var buffer = StreamBuffer()
    var bufferedBytes: Int { buffer.buffered }
    private var done = false

    init(
        session: HandlerContext, request: TrackRequest,
        completion: @escaping (Result<TrackInfo, StreamErrorCode>) -> Void
    ) {
        self.session = session
        self.request = request
        self.completion = completion
    }

    func start() {
        session.openStream(bidirectional: true, isCancelled: { [weak self] in self?.done ?? true }) { [self] stream in
            self.stream = stream
            session.adopt(stream, by: self)
            session.setSendOrder(stream, SendOrder.control)
            // Our side stays open until the answer arrives: the Rust publisher takes an
            // early FIN as a cancellation.
            session.write(
                stream, Bytes([UInt8(BidiStreamType.track.rawValue)] + request.encoded()), fin: false)
        }
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        buffer.append(data)
        do {
            if let info = try buffer.next(TrackInfo.self) {
                finish(.success(info))
            } else if fin {
                finish(.failure(.malformedTrack))
            }
        } catch {
            session.counters.malformedStreams += 1
            if let stream { session.abortStream(stream, .malformedTrack, resetSend: false) }
            finish(.failure(.malformedTrack))
        }
    }

    func peerReset(wireCode: UInt64) { finish(.failure(StreamErrorCode(wireValue: wireCode) ?? .internal)) }

    private func finish(_ result: Result<TrackInfo, StreamErrorCode>) {
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

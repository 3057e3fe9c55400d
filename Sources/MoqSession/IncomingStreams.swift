// SPDX-License-Identifier: MIT
import MoqWire

/// A unidirectional stream the peer opened: Setup or Group (by its first varint).
final class IncomingUniStream: StreamHandler {
    let session: HandlerContext
    let stream: Int64
    private var buffer = StreamBuffer()
    var bufferedBytes: Int { buffer.buffered }
    private var type: UniStreamType?

    init(session: HandlerContext, stream: Int64) {
        self.session = session
        self.stream = stream
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        buffer.append(data)
        guard type == nil else { return parseSetup(fin: fin) }
        guard let raw = buffer.readVarInt() else {
            if fin { session.detach(stream) }
            return
        }
        switch UniStreamType(rawValue: raw) {
        case .setup:
            // One Setup stream per session: a second one is a violation as soon as its type is
            // known (not after it has buffered a message), as the Rust peer treats it.
            guard session.claimSetupStream() else {
                return session.close(.protocolViolation, reason: "second Setup stream")
            }
            type = .setup
            parseSetup(fin: fin)
        case .group:
            // Hand the rest of the stream to a group reader.
            let reader = GroupReader(session: session, stream: stream)
            session.adopt(stream, by: reader)
            let rest = buffer.drain()
            rest.withUnsafeBytes { reader.received($0, fin: fin) }
        case nil:
            // Unknown uni stream types are ignored (moq-lite rule); stop the bytes.
            session.counters.malformedStreams += 1
            session.abortStream(stream, .cancel, resetSend: false)
            session.detach(stream)
        }
    }

    private func parseSetup(fin: Bool) {
        do {
            if let setup = try buffer.next(Setup.self) {
                session.detach(stream)
                session.setupArrived(setup)
            } else if fin {
                session.close(.protocolViolation, reason: "truncated SETUP")
            }
        } catch {
            session.close(.protocolViolation, reason: "malformed SETUP: \(error)")
        }
    }

    func sessionClosed() {}
}

/// A bidirectional stream the peer opened: a request to us (we publish).
/// Dispatched by its type once the SETUP exchange is complete.
final class IncomingRequestStream: StreamHandler {
    let session: HandlerContext
    let stream: Int64
    private var buffer = StreamBuffer()
    var bufferedBytes: Int { buffer.buffered }
    private var fin = false
    private var queued = false

    init(session: HandlerContext, stream: Int64) {
        self.session = session
        self.stream = stream
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        buffer.append(data)
        self.fin = self.fin || fin
        if buffer.buffered > WireLimits.maxControlMessage + 16 {
            session.counters.malformedStreams += 1
            session.abortStream(stream, .malformedTrack)
            session.detach(stream)
            return
        }
        dispatchIfPossible()
    }

    func sessionReady() { dispatchIfPossible() }

    private func dispatchIfPossible() {
        guard session.isReady else {
            if !queued {
                queued = true
                guard session.holdUntilReady(stream) else {
                    session.abortStream(stream, .cancel)
                    session.detach(stream)
                    return
                }
            }
            return
        }
        guard let raw = buffer.readVarInt() else {
            if fin { session.detach(stream) }
            return
        }
        let handler: (any StreamHandler)?
        switch BidiStreamType(rawValue: raw) {
        case .announce: handler = ServedAnnounce(session: session, stream: stream, buffer: buffer)
        case .subscribe: handler = ServedSubscription(session: session, stream: stream, buffer: buffer)
        case .fetch: handler = ServedFetch(session: session, stream: stream, buffer: buffer)
        case .track: handler = ServedTrack(session: session, stream: stream, buffer: buffer)
        case .probe: handler = ServedProbe(session: session, stream: stream, buffer: buffer)
        case .goaway: handler = GoawayReader(session: session, stream: stream, buffer: buffer)
        case .session, nil:
            // Unknown (and lite-01/02 session) streams are reset with CANCEL; the session survives.
            session.counters.malformedStreams += 1
            session.abortStream(stream, .cancel)
            session.detach(stream)
            handler = nil
        }
        guard let handler else { return }
        session.adopt(stream, by: handler)
        handler.received(UnsafeRawBufferPointer(start: nil, count: 0), fin: fin)
    }

    func sessionClosed() {}
}

/// A stream whose work is done, kept only until the peer's side ends.
final class DrainingStream: StreamHandler {
    let session: HandlerContext
    let stream: Int64

    init(session: HandlerContext, stream: Int64) {
        self.session = session
        self.stream = stream
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        if fin { session.detach(stream) }
    }

    func peerReset(wireCode: UInt64) { session.detach(stream) }
    func sessionClosed() {}
}

/// A peer's stream we are done with: everything that still arrives is dropped (and its
/// credit returned) until the transport reports the stream closed.
final class ClosedStream: StreamHandler {
    func sessionClosed() {}
}

/// GOAWAY from the peer.
final class GoawayReader: StreamHandler {
    let session: HandlerContext
    let stream: Int64
    private var buffer: StreamBuffer
    var bufferedBytes: Int { buffer.buffered }

    init(session: HandlerContext, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        self.buffer = buffer
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        buffer.append(data)
        do {
            guard let goaway = try buffer.next(Goaway.self) else {
                if fin { session.detach(stream) }
                return
            }
            session.finish(stream)
            session.detach(stream)
            session.goawayArrived(uri: goaway.uri)
        } catch {
            session.counters.malformedStreams += 1
            session.abortStream(stream, .malformedTrack)
            session.detach(stream)
        }
    }

    func sessionClosed() {}
}

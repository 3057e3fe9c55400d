// SPDX-License-Identifier: MIT
import MoqWire

/// What the HTTP/3 side of a WebTransport connection asks of its QUIC connection.
public protocol WebTransportStreams: AnyObject {
    /// Opens a stream of ours; nil when the peer's credit is exhausted.
    func openStream(bidirectional: Bool) -> Int64?
    func write(_ stream: Int64, _ bytes: [UInt8], fin: Bool)
    func stopSending(_ stream: Int64, code: UInt64)
    func resetStream(_ stream: Int64, code: UInt64)
    /// Closes the whole connection with an HTTP/3 error.
    func closeConnection(code: UInt64, reason: String)
}

/// The HTTP/3 side of one WebTransport connection, sans-IO: SETTINGS on the control stream, the
/// extended CONNECT and its answer, and the routing of the peer's streams — its WebTransport
/// streams (0x54 uni, 0x41 bidi) to the session with their preambles removed, its control and
/// QPACK streams read here, anything else refused. One session per connection (moq-lite opens one).
///
/// Driven on the connection's thread; every buffer fed by the peer is bounded.
public final class WebTransportEndpoint {
    /// What happened, for the owner.
    public enum Event: Equatable {
        /// Server: a CONNECT arrived; answer with ``accept(protocol:)`` or ``reject(status:)``.
        case connectRequest(WebTransportConnect.Request)
        /// The session is open (client: the 200 arrived; server: accepted).
        case ready(selectedProtocol: String?)
        /// A stream of the session, with what arrived on it after its preamble; later bytes of it
        /// are the application's and are not given to ``received(stream:_:fin:)``.
        case sessionStream(id: Int64, initial: [UInt8], fin: Bool)
        /// The peer closed the session (capsule, or the CONNECT stream ended).
        case closed(code: UInt32, reason: String)
        /// The peer asked for the session to end soon.
        case draining
        /// Client: the server answered the CONNECT with a status outside 2xx (403: the path is
        /// outside the token's grant, 404: no such root…); the session never opens.
        case rejected(status: Int)
    }

    public enum Role: Equatable {
        case client(WebTransportConnect.Request)
        case server
    }

    /// The most bytes a stream's preamble or a request's headers may take before they are complete.
    public static let maxPendingBytes = 16 * 1024
    /// The most peer streams being identified at once.
    public static let maxPendingStreams = 64

    private enum PeerStream {
        /// Type (uni) or first frame/signal (bidi) not read yet.
        case identifying([UInt8])
        case control(HTTP3FrameReader)
        /// A QPACK encoder or decoder stream: with a dynamic capacity of 0 nothing on it matters.
        case ignored
        /// The request stream carrying the CONNECT (server), read as HTTP/3 frames.
        case request(HTTP3FrameReader)
        /// A stream of the session that arrived before the session was open: held (bounded) until it is.
        case waiting(initial: [UInt8], fin: Bool)
        /// A stream handed to the session.
        case session
    }

    public let role: Role
    private unowned let streams: any WebTransportStreams
    private var peer: [Int64: PeerStream] = [:]
    private var peerSettings: HTTP3Settings?
    /// The CONNECT stream: the session id (its stream id).
    public private(set) var sessionID: Int64?
    private var connectReader = HTTP3FrameReader()
    private var capsules = CapsuleReader()
    private var answered = false
    private var closedReported = false
    /// The session id the held streams named before the CONNECT arrived (server).
    private var waitingFor: UInt64?
    public private(set) var isReady = false
    private var events: [Event] = []

    public init(role: Role, streams: any WebTransportStreams) {
        self.role = role
        self.streams = streams
    }

    /// Opens the control stream with our SETTINGS (our first uni stream, as moq-dev's side requires),
    /// and, as a client, sends the CONNECT.
    public func start() throws(HTTP3Error) -> [Event] {
        guard let control = streams.openStream(bidirectional: false) else {
            throw HTTP3Error(HTTP3Error.internalError, "no stream credit for the control stream")
        }
        var bytes: [UInt8] = []
        VarInt.encode(WebTransportWire.controlStreamType, into: &bytes)
        bytes += HTTP3Frame.settings(.webTransport()).encoded()
        streams.write(control, bytes, fin: false)
        if case .client(let request) = role {
            guard let stream = streams.openStream(bidirectional: true) else {
                throw HTTP3Error(HTTP3Error.internalError, "no stream credit for the CONNECT")
            }
            sessionID = stream
            streams.write(stream, HTTP3Frame.headers(QPACK.encode(request.fields)).encoded(), fin: false)
        }
        return take()
    }

    /// Server: accepts the pending CONNECT with 200.
    public func accept(protocol selected: String?) -> [Event] {
        guard case .server = role, let session = sessionID, !answered else { return [] }
        answered = true
        isReady = true
        let response = WebTransportConnect.Response(status: 200, selectedProtocol: selected)
        streams.write(session, HTTP3Frame.headers(QPACK.encode(response.fields)).encoded(), fin: false)
        events.append(.ready(selectedProtocol: selected))
        releaseWaiting()
        return take()
    }

    /// Server: refuses the pending CONNECT (e.g. 404 for an unknown root, 403 for a bad token).
    public func reject(status: Int) {
        guard case .server = role, let session = sessionID, !answered else { return }
        answered = true
        let response = WebTransportConnect.Response(status: status)
        streams.write(session, HTTP3Frame.headers(QPACK.encode(response.fields)).encoded(), fin: true)
    }

    /// Ends the session: CLOSE_WEBTRANSPORT_SESSION on the CONNECT stream, then FIN.
    public func close(code: UInt32, reason: String) {
        guard let session = sessionID else { return }
        let capsule = WebTransportCapsule.close(code: code, reason: reason).encoded()
        streams.write(session, HTTP3Frame.data(capsule).encoded(), fin: true)
    }

    /// A peer stream ended (both directions closed, or reset): its entry goes (the peer opens a
    /// stream per group; the owner reports each one's end so that nothing accumulates).
    public func forget(stream: Int64) {
        peer.removeValue(forKey: stream)
    }

    /// Streams of the peer tracked now (for tests and the owner's budget).
    public var trackedStreams: Int { peer.count }

    /// True while a peer stream's bytes are held here (its type or preamble incomplete, or its
    /// session not open yet): the owner keeps their flow-control credit until it is handed over.
    public func holds(stream: Int64) -> Bool {
        switch peer[stream] {
        case .identifying?, .waiting?: true
        default: false
        }
    }

    /// The preamble our own streams of the session start with.
    public func preamble(bidirectional: Bool) -> [UInt8] {
        let session = UInt64(clamping: sessionID ?? 0)
        return bidirectional
            ? WebTransportWire.bidiStreamHeader(session: session) : WebTransportWire.uniStreamHeader(session: session)
    }

    /// Bytes arrived on a peer stream (or on the CONNECT stream). Errors close the connection.
    public func received(stream: Int64, _ data: [UInt8], fin: Bool) throws(HTTP3Error) -> [Event] {
        if stream == sessionID {
            try connectStreamData(data, fin: fin)
            return take()
        }
        let isUni = stream & 0x2 != 0
        switch peer[stream] {
        case nil:
            let unsettled = peer.values.count { state in
                switch state {
                case .identifying, .waiting: true
                default: false
                }
            }
            guard unsettled < Self.maxPendingStreams else {
                throw HTTP3Error(HTTP3Error.excessiveLoad, "too many streams being opened")
            }
            peer[stream] = .identifying([])
            return try received(stream: stream, data, fin: fin)
        case .identifying(var pending)?:
            pending += data
            guard pending.count <= Self.maxPendingBytes else {
                throw HTTP3Error(HTTP3Error.excessiveLoad, "stream \(stream) preamble too long")
            }
            try identify(stream, pending, isUni: isUni, fin: fin)
        case .waiting(var initial, let ended)?:
            initial += data
            guard initial.count <= Self.maxPendingBytes else {
                throw HTTP3Error(HTTP3Error.excessiveLoad, "stream \(stream) held too long before the session opened")
            }
            peer[stream] = .waiting(initial: initial, fin: ended || fin)
        case .control(var reader)?:
            if fin { throw HTTP3Error(HTTP3Error.closedCriticalStream, "the peer closed its control stream") }
            reader.append(data)
            peer[stream] = .control(reader)
            try readControl(stream)
        case .request(var reader)?:
            reader.append(data)
            peer[stream] = .request(reader)
            try readRequest(stream, fin: fin)
        case .ignored?, .session?:
            break
        }
        return take()
    }

    // MARK: Identifying the peer's streams

    private func identify(_ stream: Int64, _ pending: [UInt8], isUni: Bool, fin: Bool) throws(HTTP3Error) {
        var cursor = 0
        guard let type = decodeVarInt(pending, &cursor) else {
            peer[stream] = .identifying(pending)
            return
        }
        if isUni {
            switch type {
            case WebTransportWire.controlStreamType:
                guard !peer.values.contains(where: { if case .control = $0 { true } else { false } }) else {
                    throw HTTP3Error(HTTP3Error.streamCreationError, "a second control stream")
                }
                var reader = HTTP3FrameReader()
                reader.append(pending[cursor...])
                peer[stream] = .control(reader)
                try readControl(stream)
            case WebTransportWire.qpackEncoderStreamType, WebTransportWire.qpackDecoderStreamType:
                peer[stream] = .ignored
            case WebTransportWire.uniStreamType:
                try sessionStream(stream, pending, after: cursor, fin: fin)
            default:
                // Push streams (never asked for) and unknown types: refused, the connection goes on.
                streams.stopSending(stream, code: HTTP3Error.streamCreationError)
                peer[stream] = .ignored
            }
        } else if type == WebTransportWire.bidiSignal {
            try sessionStream(stream, pending, after: cursor, fin: fin)
        } else if case .server = role, sessionID == nil {
            // The request stream: HTTP/3 frames carrying the CONNECT.
            var reader = HTTP3FrameReader()
            reader.append(pending)
            sessionID = stream
            peer[stream] = nil
            connectReader = reader
            try readRequest(stream, fin: fin)
        } else {
            throw HTTP3Error(HTTP3Error.requestRejected, "only one WebTransport session per connection")
        }
    }

    private func sessionStream(_ stream: Int64, _ pending: [UInt8], after cursor: Int, fin: Bool) throws(HTTP3Error) {
        var c = cursor
        guard let session = decodeVarInt(pending, &c) else {
            peer[stream] = .identifying(pending)
            return
        }
        let initial = Array(pending[c...])
        if let mine = sessionID, session == UInt64(clamping: mine), isReady {
            peer[stream] = .session
            events.append(.sessionStream(id: stream, initial: initial, fin: fin))
        } else if sessionID.map({ session == UInt64(clamping: $0) }) ?? ((waitingFor ?? session) == session) {
            // The peer may open streams as soon as it sent (or answered) the CONNECT; they can
            // overtake the CONNECT stream's bytes. Held until the session opens — those of one
            // session id only (one session per connection).
            waitingFor = session
            peer[stream] = .waiting(initial: initial, fin: fin)
        } else {
            // A stream of a session that does not exist: refused.
            streams.stopSending(stream, code: WebTransportWire.bufferedStreamRejected)
            peer[stream] = .ignored
        }
    }

    /// The session opened: the streams that were waiting for it go to the application.
    private func releaseWaiting() {
        if let held = waitingFor, let mine = sessionID, held != UInt64(clamping: mine) {
            // They named another session: refused.
            for (stream, state) in peer {
                guard case .waiting = state else { continue }
                streams.stopSending(stream, code: WebTransportWire.bufferedStreamRejected)
                peer[stream] = .ignored
            }
            return
        }
        for (stream, state) in peer.sorted(by: { $0.key < $1.key }) {
            guard case .waiting(let initial, let fin) = state else { continue }
            peer[stream] = .session
            events.append(.sessionStream(id: stream, initial: initial, fin: fin))
        }
    }

    // MARK: Control stream

    private func readControl(_ stream: Int64) throws(HTTP3Error) {
        guard case .control(var reader)? = peer[stream] else { return }
        while let frame = try reader.next() {
            switch frame {
            case .settings(let settings):
                guard peerSettings == nil else { throw HTTP3Error(HTTP3Error.frameUnexpected, "SETTINGS twice") }
                peerSettings = settings
            case .goaway:
                guard peerSettings != nil else {
                    throw HTTP3Error(HTTP3Error.missingSettings, "GOAWAY before SETTINGS")
                }
                events.append(.draining)
            case .data, .headers:
                throw HTTP3Error(HTTP3Error.frameUnexpected, "DATA or HEADERS on the control stream")
            case .push:
                guard peerSettings != nil else { throw HTTP3Error(HTTP3Error.missingSettings, "frame before SETTINGS") }
            }
        }
        peer[stream] = .control(reader)
    }

    // MARK: The CONNECT stream

    private func readRequest(_ stream: Int64, fin: Bool) throws(HTTP3Error) {
        while let frame = try connectReader.next() {
            guard case .headers(let section) = frame, !answered, sessionID == stream else {
                throw HTTP3Error(HTTP3Error.frameUnexpected, "unexpected frame before the CONNECT was answered")
            }
            let fields: [HTTPField]
            do { fields = try QPACK.decode(section) } catch {
                throw HTTP3Error(HTTP3Error.qpackDecompressionFailed, error.description)
            }
            let request: WebTransportConnect.Request
            do { request = try WebTransportConnect.Request(fields: fields) } catch {
                reject(status: 400)
                return
            }
            events.append(.connectRequest(request))
            return
        }
        if fin && !answered { reject(status: 400) }
    }

    private func connectStreamData(_ data: [UInt8], fin: Bool) throws(HTTP3Error) {
        guard isReady || role != .server else {
            connectReader.append(data)
            try readRequest(sessionID ?? 0, fin: fin)
            return
        }
        connectReader.append(data)
        while let frame = try connectReader.next() {
            switch frame {
            case .headers(let section) where !isReady:
                let fields: [HTTPField]
                do { fields = try QPACK.decode(section) } catch {
                    throw HTTP3Error(HTTP3Error.qpackDecompressionFailed, error.description)
                }
                let response = try WebTransportConnect.Response(fields: fields)
                guard (200..<300).contains(response.status) else {
                    closedReported = true
                    events.append(.rejected(status: response.status))
                    return
                }
                isReady = true
                events.append(.ready(selectedProtocol: response.selectedProtocol))
                releaseWaiting()
            case .data(let payload) where isReady:
                capsules.append(payload)
                while let capsule = try capsules.next() {
                    switch capsule {
                    case .close(let code, let reason):
                        guard !closedReported else { break }
                        closedReported = true
                        events.append(.closed(code: code, reason: reason))
                    case .drain: events.append(.draining)
                    case .unknown: break
                    }
                }
            default:
                throw HTTP3Error(HTTP3Error.frameUnexpected, "unexpected frame on the CONNECT stream")
            }
        }
        if fin, !closedReported {
            closedReported = true
            events.append(.closed(code: 0, reason: ""))
        }
    }

    private func take() -> [Event] {
        defer { events = [] }
        return events
    }
}

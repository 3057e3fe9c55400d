// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqWebTransport
import MoqWire

/// The HTTP/3 side's view of a QUIC connection.
final class QUICWebTransportStreams: WebTransportStreams {
    unowned let connection: QUICConnection

    init(_ connection: QUICConnection) { self.connection = connection }

    func openStream(bidirectional: Bool) -> Int64? { connection.openStream(bidirectional: bidirectional) }
    func write(_ stream: Int64, _ bytes: [UInt8], fin: Bool) { connection.write(stream, Bytes(bytes), fin: fin) }
    func stopSending(_ stream: Int64, code: UInt64) { connection.stopSending(stream, code: code) }
    func resetStream(_ stream: Int64, code: UInt64) { connection.resetStream(stream, code: code) }
    func closeConnection(code: UInt64, reason: String) { connection.close(code: code, reason: reason) }
}

/// The session core's transport when the session runs inside a WebTransport session: the
/// session's streams start with their WebTransport preamble, datagrams carry the quarter stream
/// id, and closing sends CLOSE_WEBTRANSPORT_SESSION with the raw session code before the QUIC
/// close with the mapped one (what moq-dev's stack does).
final class WebTransportSessionTransport: QUICSessionTransport {
    unowned let endpoint: WebTransportEndpoint

    init(_ connection: QUICConnection, endpoint: WebTransportEndpoint) {
        self.endpoint = endpoint
        super.init(connection)
    }

    override func openStream(bidirectional: Bool) -> Int64? {
        guard let stream = connection.openStream(bidirectional: bidirectional) else { return nil }
        connection.write(stream, Bytes(endpoint.preamble(bidirectional: bidirectional)), fin: false)
        return stream
    }

    private var datagramPrefix: [UInt8] {
        WebTransportWire.datagram(session: UInt64(clamping: endpoint.sessionID ?? 0), payload: [])
    }

    override func sendDatagram(_ data: Bytes) -> Bool {
        var bytes = datagramPrefix
        bytes += data.array
        return connection.sendDatagram(Bytes(bytes))
    }

    override var maxDatagramPayload: Int { max(0, connection.maxDatagramPayload - datagramPrefix.count) }

    override func close(code: UInt64, reason: String) {
        endpoint.close(code: UInt32(clamping: code), reason: reason)
        connection.close(code: StreamErrorCode(rawValue: code).wireValue, reason: reason)
    }
}

/// Routes one WebTransport connection's QUIC events between the HTTP/3 endpoint and the session
/// core: the peer's streams go to the endpoint until it recognises them as streams of the
/// session (preamble removed), then to the core; our own streams and handed-over ones go straight
/// to the core. Flow-control credit for bytes the endpoint consumes (control, QPACK and CONNECT
/// streams, preambles) is returned here; the core returns credit for what it is handed.
///
/// Loop thread only. Everything here is bounded by the endpoint's limits (streams being
/// identified) and by QUIC's stream limits (streams handed over).
final class WebTransportRouter {
    let endpoint: WebTransportEndpoint
    let streams: QUICWebTransportStreams
    unowned let connection: QUICConnection
    /// Bytes of a peer stream the endpoint has seen while it was not yet the session's.
    private var pendingBytes: [Int64: Int] = [:]
    /// Peer streams handed to the core.
    private var handed: Set<Int64> = []

    init(connection: QUICConnection, role: WebTransportEndpoint.Role) {
        self.connection = connection
        let streams = QUICWebTransportStreams(connection)
        self.streams = streams
        endpoint = WebTransportEndpoint(role: role, streams: streams)
    }

    /// Where a stream's events go.
    enum Route {
        case core
        case endpoint
    }

    func route(_ stream: Int64) -> Route {
        if stream == endpoint.sessionID { return .endpoint }
        let local = StreamID.isServerInitiated(stream) != connection.isClient
        if local || handed.contains(stream) { return .core }
        return .endpoint
    }

    /// Feeds bytes of a peer stream (or the CONNECT stream) to the endpoint; returns its events.
    /// Streams it hands over are recorded, with their preamble's credit returned.
    func received(_ stream: Int64, _ data: UnsafeRawBufferPointer, fin: Bool) throws(HTTP3Error)
        -> [WebTransportEndpoint.Event]
    {
        pendingBytes[stream, default: 0] += data.count
        let events = try endpoint.received(stream: stream, Array(data), fin: fin)
        for event in events {
            guard case .sessionStream(let id, let initial, _) = event else { continue }
            handed.insert(id)
            let seen = pendingBytes.removeValue(forKey: id) ?? 0
            connection.consume(id, bytes: max(0, seen - initial.count))
        }
        if let seen = pendingBytes[stream], !endpoint.holds(stream: stream) {
            // The endpoint read them (control, QPACK, CONNECT) or refused the stream.
            pendingBytes[stream] = nil
            connection.consume(stream, bytes: seen)
        }
        return events
    }

    /// A peer stream the endpoint was holding ended early (reset): its held bytes are released.
    func abandon(_ stream: Int64) {
        if let seen = pendingBytes.removeValue(forKey: stream) { connection.consume(stream, bytes: seen) }
        endpoint.forget(stream: stream)
    }

    /// A stream is closed in both directions: nothing about it is kept.
    func closed(_ stream: Int64) {
        pendingBytes[stream] = nil
        handed.remove(stream)
        endpoint.forget(stream: stream)
    }

    /// Strips the datagram's session prefix; nil when it belongs to no session of ours. moq-dev's
    /// stack writes the raw session id where RFC 9297 has the quarter stream id: equal for the
    /// first client-opened stream (0), which is the only session id a moq client uses.
    func datagramPayload(_ data: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let session = endpoint.sessionID else { return nil }
        guard let (id, start) = WebTransportWire.parseDatagram(Array(data.prefix(8))) else { return nil }
        guard id == UInt64(clamping: session) / 4 || id == UInt64(clamping: session) else { return nil }
        return UnsafeRawBufferPointer(rebasing: data[start...])
    }
}

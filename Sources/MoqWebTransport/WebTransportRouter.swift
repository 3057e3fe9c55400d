// SPDX-License-Identifier: MIT

/// What the router needs of the connection beyond ``WebTransportStreams``: its side, and a way
/// to return flow-control credit for bytes it has read.
public protocol WebTransportConnectionIO: WebTransportStreams {
    /// True for the side that opened the connection.
    var isClient: Bool { get }
    /// `bytes` received on `stream` are done with: their credit goes back to the peer.
    func consume(_ stream: Int64, bytes: Int)
}

/// Routes one WebTransport connection's QUIC events between the HTTP/3 endpoint and the session
/// core: the peer's streams go to the endpoint until it recognises them as streams of the
/// session (preamble removed), then to the core; our own streams and handed-over ones go straight
/// to the core. Flow-control credit for bytes the endpoint consumes (control, QPACK and CONNECT
/// streams, preambles) is returned here; the core returns credit for what it is handed.
///
/// Loop thread only. Everything here is bounded by the endpoint's limits (streams being
/// identified) and by QUIC's stream limits (streams handed over).
public final class WebTransportRouter {
    public let endpoint: WebTransportEndpoint
    private unowned let connection: any WebTransportConnectionIO
    /// Bytes of a peer stream the endpoint has seen while it was not yet the session's.
    private var pendingBytes: [Int64: Int] = [:]
    /// Peer streams handed to the core.
    private var handed: Set<Int64> = []

    /// `connection` is kept unowned: its owner keeps both alive.
    public init(connection: any WebTransportConnectionIO, role: WebTransportEndpoint.Role) {
        self.connection = connection
        endpoint = WebTransportEndpoint(role: role, streams: connection)
    }

    /// Where a stream's events go.
    public enum Route: Sendable {
        /// The session's (moq-lite's).
        case core
        /// The HTTP/3 side's.
        case endpoint
    }

    public func route(_ stream: Int64) -> Route {
        if stream == endpoint.sessionID { return .endpoint }
        let serverInitiated = stream & 0x1 != 0
        let local = serverInitiated != connection.isClient
        if local || handed.contains(stream) { return .core }
        return .endpoint
    }

    /// Feeds bytes of a peer stream (or the CONNECT stream) to the endpoint; returns its events.
    /// Streams it hands over are recorded, with their preamble's credit returned.
    public func received(_ stream: Int64, _ data: UnsafeRawBufferPointer, fin: Bool) throws(HTTP3Error)
        -> [WebTransportEndpoint.Event]
    {
        pendingBytes[stream, default: 0] += data.count
        let events = adopt(try endpoint.received(stream: stream, Array(data), fin: fin))
        if let seen = pendingBytes[stream], !endpoint.holds(stream: stream) {
            // The endpoint read them (control, QPACK, CONNECT) or refused the stream.
            pendingBytes[stream] = nil
            connection.consume(stream, bytes: seen)
        }
        return events
    }

    /// Server: accepts the pending CONNECT (see ``WebTransportEndpoint/accept(protocol:)``); the
    /// streams that waited for the session are handed over with the events.
    public func accept(protocol selected: String?) -> [WebTransportEndpoint.Event] {
        adopt(endpoint.accept(protocol: selected))
    }

    /// Records the streams `events` hand to the session, returning their preambles' credit.
    private func adopt(_ events: [WebTransportEndpoint.Event]) -> [WebTransportEndpoint.Event] {
        for event in events {
            guard case .sessionStream(let id, let initial, _) = event else { continue }
            handed.insert(id)
            let seen = pendingBytes.removeValue(forKey: id) ?? 0
            connection.consume(id, bytes: max(0, seen - initial.count))
        }
        return events
    }

    /// Received bytes held here, not yet read or handed over (their credit is not returned yet).
    public var heldBytes: Int { pendingBytes.values.reduce(0, +) }

    /// A peer stream the endpoint was holding ended early (reset): its held bytes are released.
    public func abandon(_ stream: Int64) {
        if let seen = pendingBytes.removeValue(forKey: stream) { connection.consume(stream, bytes: seen) }
        endpoint.forget(stream: stream)
    }

    /// A stream is closed in both directions: nothing about it is kept.
    public func closed(_ stream: Int64) {
        // Credit for what was held still counts against the connection's window.
        if let seen = pendingBytes.removeValue(forKey: stream) { connection.consume(stream, bytes: seen) }
        handed.remove(stream)
        endpoint.forget(stream: stream)
    }

    /// Strips the datagram's session prefix; nil when it belongs to no session of ours. moq-dev's
    /// stack writes the raw session id where RFC 9297 has the quarter stream id: equal for the
    /// first client-opened stream (0), which is the only session id a moq client uses.
    public func datagramPayload(_ data: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let session = endpoint.sessionID else { return nil }
        guard let (id, start) = WebTransportWire.parseDatagram(Array(data.prefix(8))) else { return nil }
        guard id == UInt64(clamping: session) / 4 || id == UInt64(clamping: session) else { return nil }
        return UnsafeRawBufferPointer(rebasing: data[start...])
    }
}

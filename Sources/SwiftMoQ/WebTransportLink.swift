// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqWebTransport
import MoqWire

/// The HTTP/3 side's view of a QUIC connection.
final class QUICWebTransportStreams: WebTransportConnectionIO {
    unowned let connection: QUICConnection

    init(_ connection: QUICConnection) { self.connection = connection }

    var isClient: Bool { connection.isClient }
    func consume(_ stream: Int64, bytes: Int) { connection.consume(stream, bytes: bytes) }
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

    /// True for a MoQ Transport core, whose stream codes are its own: they are mapped into
    /// WebTransport's application range here (moq-lite's core maps its own).
    var mapsStreamCodes = false

    override func resetStream(_ stream: Int64, code: UInt64) {
        super.resetStream(stream, code: mapsStreamCodes ? StreamErrorCode(rawValue: code).wireValue : code)
    }

    override func stopSending(_ stream: Int64, code: UInt64) {
        super.stopSending(stream, code: mapsStreamCodes ? StreamErrorCode(rawValue: code).wireValue : code)
    }

    override func close(code: UInt64, reason: String) {
        endpoint.close(code: UInt32(clamping: code), reason: reason)
        connection.close(code: StreamErrorCode(rawValue: code).wireValue, reason: reason)
    }
}

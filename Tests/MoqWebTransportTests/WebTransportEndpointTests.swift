// SPDX-License-Identifier: MIT
import Testing

@testable import MoqWebTransport

/// Two endpoints over an in-memory stand-in for a QUIC connection: writes are queued per
/// direction and delivered when the test says, in any order it wants.
final class FakeQUIC: WebTransportConnectionIO {
    let isClient: Bool
    /// Credit returned per stream.
    var consumed: [Int64: Int] = [:]
    var nextBidi: Int64
    var nextUni: Int64
    var written: [(stream: Int64, bytes: [UInt8], fin: Bool)] = []
    var stopped: [(Int64, UInt64)] = []
    var closed: (UInt64, String)?
    var credit = 100

    init(client: Bool) {
        isClient = client
        nextBidi = client ? 0 : 1
        nextUni = client ? 2 : 3
    }

    func openStream(bidirectional: Bool) -> Int64? {
        guard credit > 0 else { return nil }
        credit -= 1
        defer { if bidirectional { nextBidi += 4 } else { nextUni += 4 } }
        return bidirectional ? nextBidi : nextUni
    }
    func write(_ stream: Int64, _ bytes: [UInt8], fin: Bool) { written.append((stream, bytes, fin)) }
    func stopSending(_ stream: Int64, code: UInt64) { stopped.append((stream, code)) }
    func resetStream(_ stream: Int64, code: UInt64) {}
    func closeConnection(code: UInt64, reason: String) { closed = (code, reason) }
    func consume(_ stream: Int64, bytes: Int) { consumed[stream, default: 0] += bytes }

    /// Takes what was written so far.
    func drain() -> [(stream: Int64, bytes: [UInt8], fin: Bool)] {
        defer { written = [] }
        return written
    }
}

@Suite("WebTransport endpoint: SETTINGS, CONNECT, stream routing, close")
struct WebTransportEndpointTests {
    static let request = WebTransportConnect.Request(
        authority: "relay:4443", path: "/anon?jwt=t", protocols: ["moq-lite-06"])

    func pair() throws -> (FakeQUIC, WebTransportEndpoint, FakeQUIC, WebTransportEndpoint) {
        let cq = FakeQUIC(client: true)
        let sq = FakeQUIC(client: false)
        let client = WebTransportEndpoint(role: .client(Self.request), streams: cq)
        let server = WebTransportEndpoint(role: .server, streams: sq)
        #expect(try client.start().isEmpty)
        #expect(try server.start().isEmpty)
        return (cq, client, sq, server)
    }

    func deliver(_ writes: [(stream: Int64, bytes: [UInt8], fin: Bool)], to endpoint: WebTransportEndpoint)
        throws -> [WebTransportEndpoint.Event]
    {
        var events: [WebTransportEndpoint.Event] = []
        for w in writes { events += try endpoint.received(stream: w.stream, w.bytes, fin: w.fin) }
        return events
    }

    @Test("the CONNECT reaches the server byte by byte; the 200 opens the session on both sides")
    func handshake() throws {
        let (cq, client, sq, server) = try pair()
        let toServer = cq.drain()
        #expect(toServer.map(\.stream) == [2, 0])  // the control stream first, then the CONNECT
        var events: [WebTransportEndpoint.Event] = []
        for w in toServer {
            for b in w.bytes { events += try server.received(stream: w.stream, [b], fin: false) }
        }
        #expect(events == [.connectRequest(Self.request)])
        #expect(server.accept(protocol: "moq-lite-06") == [.ready(selectedProtocol: "moq-lite-06")])
        #expect(try deliver(sq.drain(), to: client) == [.ready(selectedProtocol: "moq-lite-06")])
        #expect(client.sessionID == 0 && server.sessionID == 0)
    }

    @Test("streams that overtake the 200 wait for it; then they go to the session with their bytes")
    func overtakingStreams() throws {
        let (cq, client, sq, server) = try pair()
        _ = try deliver(cq.drain(), to: server)
        _ = server.accept(protocol: "moq-lite-06")
        let answer = sq.drain()
        // The server's first moq stream (uni 7: preamble + "hi") arrives before its control stream and the 200.
        let uni = try #require(sq.openStream(bidirectional: false))
        let early = try client.received(
            stream: uni, server.preamble(bidirectional: false) + Array("hi".utf8), fin: true)
        #expect(early.isEmpty)
        let events = try deliver(answer, to: client)
        #expect(
            events == [
                .ready(selectedProtocol: "moq-lite-06"), .sessionStream(id: uni, initial: Array("hi".utf8), fin: true),
            ])
        client.forget(stream: uni)
        // A bidi stream of the client (4) after the session opened: delivered at once.
        let bidi = try #require(cq.openStream(bidirectional: true))
        #expect(
            try server.received(stream: bidi, client.preamble(bidirectional: true) + [9], fin: false)
                == [.sessionStream(id: bidi, initial: [9], fin: false)])
    }

    @Test("CLOSE_WEBTRANSPORT_SESSION reaches the peer with its code and reason")
    func close() throws {
        let (cq, client, sq, server) = try pair()
        _ = try deliver(cq.drain(), to: server)
        _ = server.accept(protocol: nil)
        _ = try deliver(sq.drain(), to: client)
        client.close(code: 0x11, reason: "timeout")
        // The capsule and the FIN in separate deliveries: one close, with the peer's code.
        let closing = cq.drain()
        let capsule = closing[0].bytes
        #expect(try server.received(stream: 0, capsule, fin: false) == [.closed(code: 0x11, reason: "timeout")])
        #expect(try server.received(stream: 0, [], fin: true).isEmpty)
    }

    @Test("streams held before the CONNECT that name another session are refused, not handed over")
    func bogusSessionStreams() throws {
        let (cq, _, sq, server) = try pair()
        // A uni stream claiming session 8 arrives before the CONNECT (on stream 0).
        #expect(try server.received(stream: 6, WebTransportWire.uniStreamHeader(session: 8) + [1], fin: false).isEmpty)
        _ = try deliver(cq.drain(), to: server)
        #expect(server.accept(protocol: nil) == [.ready(selectedProtocol: nil)])
        #expect(sq.stopped.contains { $0.0 == 6 && $0.1 == WebTransportWire.bufferedStreamRejected })
    }

    @Test("a refused or malformed CONNECT: 400 from the server, a rejection event at the client")
    func refused() throws {
        let (cq, client, sq, server) = try pair()
        var bad = Self.request.fields
        bad[1] = HTTPField(":protocol", "websocket")
        let writes = cq.drain()
        _ = try server.received(stream: writes[0].stream, writes[0].bytes, fin: false)
        #expect(try server.received(stream: 0, HTTP3Frame.headers(QPACK.encode(bad)).encoded(), fin: false).isEmpty)
        let answer = sq.drain().filter { $0.stream == 0 }
        #expect(answer.count == 1 && answer[0].fin)
        #expect(try deliver(answer, to: client) == [.rejected(status: 400)])
    }

    @Test("hostile peers: a second control stream, SETTINGS twice, unknown stream types, a flood of half-open streams")
    func hostile() throws {
        let (cq, _, sq, server) = try pair()
        let control = cq.drain()[0]
        _ = try server.received(stream: control.stream, control.bytes, fin: false)
        #expect(throws: HTTP3Error.self) { try server.received(stream: 6, [0x00], fin: false) }
        #expect(throws: HTTP3Error.self) {
            try server.received(stream: control.stream, HTTP3Frame.settings(.webTransport()).encoded(), fin: false)
        }
        // An unknown uni stream type: refused with H3_STREAM_CREATION_ERROR, the connection goes on.
        let (cq2, _, sq2, server2) = try pair()
        _ = cq2
        #expect(try server2.received(stream: 10, [0x21], fin: false).isEmpty)
        #expect(sq2.stopped.first?.1 == HTTP3Error.streamCreationError)
        // 64 streams that never finish their preamble are the most held at once.
        let (_, _, _, server3) = try pair()
        for i in 0..<64 { _ = try server3.received(stream: Int64(14 + 4 * i), [0x40], fin: false) }
        #expect(throws: HTTP3Error.self) { try server3.received(stream: 1000 * 4 + 2, [0x40], fin: false) }
        _ = sq
    }
}

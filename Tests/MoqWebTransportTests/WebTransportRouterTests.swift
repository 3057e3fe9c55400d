// SPDX-License-Identifier: MIT
import Testing

@testable import MoqWebTransport

@Suite("WebTransport router: which side a stream's bytes go to, and their flow-control credit")
struct WebTransportRouterTests {
    /// Delivers raw bytes to the router.
    func feed(_ router: WebTransportRouter, _ stream: Int64, _ bytes: [UInt8], fin: Bool = false) throws
        -> [WebTransportEndpoint.Event]
    {
        try bytes.withUnsafeBytes { try router.received(stream, $0, fin: fin) }
    }

    @Test(
        "a stream that arrives before the CONNECT is accepted is held, handed over at accept with its preamble's credit returned, and later bytes go to the session"
    )
    func earlyStreamHandedAtAccept() throws {
        let io = FakeQUIC(client: false)
        let router = WebTransportRouter(connection: io, role: .server)
        _ = try router.endpoint.start()
        // The client's control stream (2), then a session uni stream (6) that overtook the CONNECT.
        #expect(try feed(router, 2, [0x00] + HTTP3Frame.settings(.webTransport()).encoded()).isEmpty)
        let preamble = WebTransportWire.uniStreamHeader(session: 0)
        #expect(try feed(router, 6, preamble + [1, 2, 3]).isEmpty)
        #expect(router.route(6) == .endpoint && router.heldBytes == preamble.count + 3)
        // The CONNECT on stream 0.
        let connect = HTTP3Frame.headers(QPACK.encode(WebTransportEndpointTests.request.fields)).encoded()
        let events = try feed(router, 0, connect)
        #expect(events.count == 1)
        guard case .connectRequest = events.first else {
            Issue.record("no CONNECT: \(events)")
            return
        }
        // Accepting releases the held stream to the session: its bytes after the preamble, its
        // preamble's credit returned here, and from now on its bytes go to the session.
        let accepted = router.accept(protocol: "moq-lite-06")
        #expect(accepted.contains(.sessionStream(id: 6, initial: [1, 2, 3], fin: false)))
        #expect(router.route(6) == .core)
        #expect(io.consumed[6] == preamble.count)
        #expect(router.heldBytes == 0)
        // Control and CONNECT bytes were read here, so their credit went back.
        #expect(io.consumed[2] == 1 + HTTP3Frame.settings(.webTransport()).encoded().count)
        #expect(io.consumed[0] == connect.count)
        // Our own streams are the session's from the start.
        #expect(router.route(7) == .core && router.route(3) == .core)
        router.closed(6)
        #expect(router.route(6) == .endpoint)
    }

    @Test("datagrams of the session keep their payload; others and malformed ones are dropped")
    func datagrams() throws {
        let io = FakeQUIC(client: true)
        let router = WebTransportRouter(connection: io, role: .client(WebTransportEndpointTests.request))
        _ = try router.endpoint.start()
        let payload: [UInt8] = [9, 8, 7]
        let ours = WebTransportWire.datagram(session: 0, payload: payload)
        #expect(ours.withUnsafeBytes { router.datagramPayload($0).map(Array.init) } == payload)
        let other = WebTransportWire.datagram(session: 8, payload: payload)
        #expect(other.withUnsafeBytes { router.datagramPayload($0) } == nil)
        #expect([UInt8(0x40)].withUnsafeBytes { router.datagramPayload($0) } == nil)
    }
}

// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import Testing

@testable import MoqQMux

/// Two connections wired back to back, records handed over by hand (no sockets, no clock).
final class QMuxPair {
    let client: QMuxConnection
    let server: QMuxConnection
    var clientEvents: [QMuxEvent] = []
    var serverEvents: [QMuxEvent] = []
    /// Every record sent, with its sender.
    var records: [(fromClient: Bool, bytes: [UInt8])] = []
    var now: UInt64 = 1_000_000_000

    init(client: QMuxSettings = QMuxSettings(), server: QMuxSettings = QMuxSettings()) {
        self.client = QMuxConnection(isClient: true, settings: client, now: now)
        self.server = QMuxConnection(isClient: false, settings: server, now: now)
    }

    /// A pair whose transport parameters have crossed (both sides ready).
    static func ready(client: QMuxSettings = QMuxSettings(), server: QMuxSettings = QMuxSettings()) -> QMuxPair {
        let pair = QMuxPair(client: client, server: server)
        pair.pump()
        return pair
    }

    /// Moves records both ways until neither side has one.
    func pump() {
        var moved = true
        while moved {
            moved = false
            while let r = client.nextRecord(now: now) {
                records.append((true, r))
                server.receive(record: Bytes(r), now: now)
                moved = true
            }
            while let r = server.nextRecord(now: now) {
                records.append((false, r))
                client.receive(record: Bytes(r), now: now)
                moved = true
            }
            clientEvents += client.takeEvents()
            serverEvents += server.takeEvents()
        }
    }

    /// Bytes received on `stream` by `side`'s events so far, and whether FIN came.
    static func data(_ events: [QMuxEvent], _ stream: Int64) -> (bytes: [UInt8], fin: Bool) {
        var out: [UInt8] = []
        var fin = false
        for case .received(let id, let data, let f) in events where id == stream {
            out += data.array
            fin = fin || f
        }
        return (out, fin)
    }
}

extension [QMuxEvent] {
    var closeReason: QMuxCloseReason? {
        for case .closed(let reason) in self { return reason }
        return nil
    }
}

@Suite("qmux connection")
struct QMuxConnectionTests {
    @Test("each side sends its transport parameters first; both are ready once they crossed")
    func handshake() {
        let pair = QMuxPair.ready()
        #expect(pair.clientEvents.contains(.ready) && pair.serverEvents.contains(.ready))
        #expect(pair.records.count == 2)
        for record in pair.records {
            #expect(Array(record.bytes.prefix(8)) == [0xff, 0x51, 0x53, 0x30, 0x0d, 0x0a, 0x0d, 0x0a])
        }
        #expect(pair.server.peerParameters?.initialMaxStreamsUni == 10_000)
        // No datagrams and the default record size: both left out, as moq-lite over qmux wants.
        #expect(pair.server.peerParameters?.maxDatagramFrameSize == 0)
    }

    @Test("a stream's bytes arrive in order and whole, in records no larger than 16 382 bytes")
    func streamData() {
        let pair = QMuxPair.ready()
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let id = pair.client.openStream(bidirectional: false)!
        #expect(id == 2)
        pair.client.write(id, Bytes(payload[..<40_000]), fin: false)
        pair.client.write(id, Bytes(payload[40_000...]), fin: true)
        #expect(pair.client.unsentBytes(id) == 100_000)
        pair.pump()
        let got = QMuxPair.data(pair.serverEvents, id)
        #expect(got.bytes == payload && got.fin)
        #expect(pair.serverEvents.contains(.streamOpened(2)))
        #expect(pair.serverEvents.contains(.streamClosed(2)) && pair.clientEvents.contains(.streamClosed(2)))
        #expect(pair.records.allSatisfy { $0.bytes.count <= 16_382 })
        #expect(pair.client.totalUnsentBytes == 0)
    }

    @Test("a bidirectional stream carries both ways; ids follow QUIC's numbering")
    func bidirectional() {
        let pair = QMuxPair.ready()
        let a = pair.client.openStream(bidirectional: true)!
        let b = pair.client.openStream(bidirectional: true)!
        let c = pair.server.openStream(bidirectional: false)!
        #expect([a, b, c] == [0, 4, 3])
        pair.client.write(a, Bytes([1, 2, 3]), fin: false)
        pair.pump()
        pair.server.write(a, Bytes([9]), fin: true)
        pair.client.finish(a)
        pair.pump()
        #expect(QMuxPair.data(pair.serverEvents, a) == ([1, 2, 3], true))
        #expect(QMuxPair.data(pair.clientEvents, a) == ([9], true))
        #expect(pair.serverEvents.contains(.streamClosed(a)) && pair.clientEvents.contains(.streamClosed(a)))
    }

    @Test("flow control: the sender stops at the window; consuming half of it sends more credit")
    func streamCredit() {
        var small = QMuxSettings()
        small.maxStreamData = 1_000
        let pair = QMuxPair.ready(server: small)
        let id = pair.client.openStream(bidirectional: false)!
        pair.client.write(id, Bytes([UInt8](repeating: 7, count: 5_000)), fin: true)
        pair.pump()
        #expect(QMuxPair.data(pair.serverEvents, id).bytes.count == 1_000)
        #expect(pair.client.unsentBytes(id) == 4_000)
        // 400 consumed: not yet half the window, no credit.
        pair.server.consumed(id, bytes: 400)
        pair.pump()
        #expect(QMuxPair.data(pair.serverEvents, id).bytes.count == 1_000)
        pair.server.consumed(id, bytes: 200)
        pair.pump()
        #expect(QMuxPair.data(pair.serverEvents, id).bytes.count == 1_600)
        for _ in 0..<10 {
            pair.server.consumed(id, bytes: 1_000)
            pair.pump()
        }
        #expect(QMuxPair.data(pair.serverEvents, id) == ([UInt8](repeating: 7, count: 5_000), true))
    }

    @Test("flow control: the connection window holds across streams, credit returns as bytes are consumed")
    func connectionCredit() {
        var small = QMuxSettings()
        small.maxData = 3_000
        let pair = QMuxPair.ready(server: small)
        let ids = (0..<3).map { _ in pair.client.openStream(bidirectional: false)! }
        for id in ids { pair.client.write(id, Bytes([UInt8](repeating: 1, count: 2_000)), fin: true) }
        pair.pump()
        let delivered = { ids.map { QMuxPair.data(pair.serverEvents, $0).bytes.count }.reduce(0, +) }
        #expect(delivered() == 3_000)
        // Streams that finished are gone; their bytes still return credit when consumed.
        var consumed: [Int64: Int] = [:]
        for _ in 0..<4 {
            for id in ids {
                let n = QMuxPair.data(pair.serverEvents, id).bytes.count
                pair.server.consumed(id, bytes: n - consumed[id, default: 0])
                consumed[id] = n
            }
            pair.pump()
        }
        #expect(delivered() == 6_000)
    }

    @Test("stream limit: opening waits for MAX_STREAMS, which comes as the peer's streams close")
    func streamLimit() {
        var few = QMuxSettings()
        few.maxStreamsUni = 4
        let pair = QMuxPair.ready(server: few)
        var opened: [Int64] = []
        while let id = pair.client.openStream(bidirectional: false) { opened.append(id) }
        #expect(opened.count == 4)
        for id in opened.prefix(2) { pair.client.write(id, Bytes([1]), fin: true) }
        pair.pump()
        #expect(pair.clientEvents.contains(.streamCredit(bidirectional: false)))
        #expect(pair.client.openStream(bidirectional: false) == 18)
    }

    @Test("RESET_STREAM and STOP_SENDING carry raw codes (no WebTransport mapping)")
    func resetAndStop() {
        let pair = QMuxPair.ready()
        let id = pair.client.openStream(bidirectional: true)!
        let other = pair.client.openStream(bidirectional: true)!
        pair.client.write(id, Bytes([1, 2]), fin: false)
        pair.client.write(other, Bytes([1]), fin: false)
        pair.pump()
        pair.client.resetStream(id, code: 7)
        pair.server.stopSending(other, code: 3)
        pair.pump()
        #expect(pair.serverEvents.contains(.streamReset(id, code: 7)))
        #expect(pair.clientEvents.contains(.stopSending(other, code: 3)))
        #expect(pair.records.contains { $0.fromClient && $0.bytes == [0x04, 0x00, 0x07, 0x02] })
    }

    @Test("send order: the higher order's bytes go first")
    func sendOrder() {
        let pair = QMuxPair.ready()
        let low = pair.client.openStream(bidirectional: false)!
        let high = pair.client.openStream(bidirectional: false)!
        pair.client.setSendOrder(high, 5)
        pair.client.write(low, Bytes([UInt8](repeating: 1, count: 20_000)), fin: false)
        pair.client.write(high, Bytes([UInt8](repeating: 2, count: 20_000)), fin: false)
        pair.pump()
        let order = pair.serverEvents.compactMap { event -> Int64? in
            if case .received(let id, _, _) = event { return id }
            return nil
        }
        #expect(order.first == high && order.last == low)
    }

    @Test("notifyWhenUnsent fires once the queue drains below the threshold")
    func drain() {
        let pair = QMuxPair.ready()
        let id = pair.client.openStream(bidirectional: false)!
        pair.client.write(id, Bytes([UInt8](repeating: 1, count: 50_000)), fin: false)
        pair.client.notifyWhenUnsent(below: 10_000)
        #expect(pair.client.takeEvents().isEmpty)
        pair.pump()
        #expect(pair.clientEvents.filter { $0 == .unsentBelow }.count == 1)
    }

    @Test(
        "QX_PING every keep-alive interval is answered and measures the round trip; silence closes at the idle timeout")
    func liveness() {
        var settings = QMuxSettings()
        settings.idleTimeoutMs = 5_000
        let pair = QMuxPair.ready(server: settings)
        pair.now += 1_000_000_000
        pair.server.tick(now: pair.now)
        let ping = pair.server.nextRecord(now: pair.now)!
        #expect(ping == QMuxFrame.ping(0).encoded())
        pair.now += 20_000_000
        pair.client.receive(record: Bytes(ping), now: pair.now)
        #expect(pair.client.nextRecord(now: pair.now) == QMuxFrame.pingResponse(0).encoded())
        pair.server.receive(record: Bytes(QMuxFrame.pingResponse(0).encoded()), now: pair.now)
        #expect(pair.server.smoothedRTT == 20_000_000)
        // An answer to a ping never sent is ignored.
        pair.server.receive(record: Bytes(QMuxFrame.pingResponse(9).encoded()), now: pair.now)
        #expect(pair.server.smoothedRTT == 20_000_000)
        // Nothing for 5 s (the smaller idle timeout, the server's): closed, silently.
        pair.now += 5_000_000_000
        #expect(pair.client.nextDeadline! <= pair.now)
        pair.client.tick(now: pair.now)
        #expect(pair.client.takeEvents().closeReason == .idleTimeout)
        #expect(pair.client.nextRecord(now: pair.now) == nil && pair.client.isFinished)
    }

    @Test("close: APPLICATION_CLOSE with the raw code is the last record")
    func close() {
        let pair = QMuxPair.ready()
        let id = pair.client.openStream(bidirectional: false)!
        pair.client.write(id, Bytes([1]), fin: false)
        pair.client.close(code: 4, reason: "bye")
        #expect(pair.client.nextRecord(now: pair.now) == QMuxFrame.applicationClose(code: 4, reason: "bye").encoded())
        #expect(pair.client.nextRecord(now: pair.now) == nil && pair.client.isFinished)
        pair.server.receive(record: Bytes(QMuxFrame.applicationClose(code: 4, reason: "bye").encoded()), now: pair.now)
        #expect(pair.server.takeEvents().closeReason == .application(code: 4, reason: "bye", byPeer: true))
        #expect(pair.client.openStream(bidirectional: false) == nil)
    }

    @Test("moq-dev's client as captured: its streams, FIN frame and QX_PING")
    func capturedRustClient() throws {
        let server = QMuxConnection(isClient: false, now: 0)
        let hex = QMuxFrameTests.hex
        let records = [
            "ff5153300d0a0d0a 35 01 04 80007530 04 04 80100000 05 04 80040000 06 04 80040000 07 04 80040000 "
                + "08 02 4064 09 02 4064 20 02 7ffe c571c59429cd0845 02 7ffe",
            "0e 00 00 03 01 01 00",
            "0e 02 00 0d 01 0b 01 05 08 c000000000000001",
            "0f 02 0d 00",
            "f48c67529ef8c7bd 00",
        ]
        for record in records { server.receive(record: Bytes(hex(record)), now: 1) }
        let events = server.takeEvents()
        #expect(events.contains(.ready) && events.contains(.streamOpened(0)) && events.contains(.streamOpened(2)))
        #expect(QMuxPair.data(events, 0) == ([1, 1, 0], false))
        #expect(QMuxPair.data(events, 2).bytes.count == 13 && QMuxPair.data(events, 2).fin)
        #expect(server.closeReason == nil)
        let answer = server.nextRecord(now: 2)!
        // Our parameters, then the answer to its ping.
        #expect(answer.suffix(9) == hex("f48c67529ef8c7be 00")[...])
    }
}

/// Bytes a hostile peer sends: each closes the connection with the QUIC code for the rule it broke.
@Suite("qmux connection: hostile peers")
struct QMuxHostileTests {
    /// A server that received the client's parameters, then `frames` as one record.
    static func serverAfter(_ frames: [QMuxFrame], settings: QMuxSettings = QMuxSettings()) -> QMuxConnection {
        let server = QMuxConnection(isClient: false, settings: settings, now: 0)
        var p = QMuxTransportParameters()
        p.initialMaxData = 1 << 20
        p.initialMaxStreamsUni = 10
        p.initialMaxStreamDataUni = 1 << 16
        server.receive(record: Bytes(QMuxFrame.transportParameters(p).encoded()), now: 0)
        server.receive(record: Bytes(frames.flatMap { $0.encoded() }), now: 0)
        return server
    }

    static func code(_ server: QMuxConnection) -> UInt64? {
        guard case .transport(let code, _, false)? = server.closeReason else { return nil }
        return code
    }

    @Test("a first frame other than the transport parameters")
    func noParameters() throws {
        let server = QMuxConnection(isClient: false, now: 0)
        server.receive(
            record: Bytes(QMuxFrame.stream(id: 2, offset: 0, data: Bytes([1]), fin: false).encoded()), now: 0)
        #expect(Self.code(server) == QMuxTransportCode.protocolViolation)
        // The CONNECTION_CLOSE goes out (after our parameters) and ends the connection.
        let record = server.nextRecord(now: 0)!
        let last = try QMuxFrame.decodeRecord(Bytes(record)).last
        guard case .connectionClose(let code, _, _)? = last else {
            Issue.record("\(String(describing: last))")
            return
        }
        #expect(code == QMuxTransportCode.protocolViolation)
        #expect(server.isFinished)
    }

    @Test("parameters twice, a datagram, an unknown frame type")
    func protocolViolations() {
        #expect(Self.code(Self.serverAfter([.transportParameters(QMuxTransportParameters())])) == 0xa)
        #expect(Self.code(Self.serverAfter([.datagram(Bytes([1]))])) == 0xa)
        let server = Self.serverAfter([])
        server.receive(record: Bytes([0x01]), now: 0)  // QUIC's PING: not carried by qmux
        #expect(Self.code(server) == 0xa)
    }

    @Test("data past the stream window, past the connection window")
    func flowControl() {
        var settings = QMuxSettings()
        settings.maxStreamData = 100
        let big = Bytes([UInt8](repeating: 0, count: 101))
        #expect(
            Self.code(Self.serverAfter([.stream(id: 2, offset: 0, data: big, fin: false)], settings: settings)) == 0x3)
        settings.maxStreamData = 1_000
        settings.maxData = 150
        let half = Bytes([UInt8](repeating: 0, count: 100))
        let frames: [QMuxFrame] = [
            .stream(id: 2, offset: 0, data: half, fin: false), .stream(id: 6, offset: 0, data: half, fin: false),
        ]
        #expect(Self.code(Self.serverAfter(frames, settings: settings)) == 0x3)
        // A reset's final size counts against the connection window too.
        #expect(
            Self.code(Self.serverAfter([.resetStream(id: 2, code: 0, finalSize: 1 << 40)], settings: settings)) == 0x3)
    }

    @Test("streams beyond the limit, up to the varint ceiling")
    func streamLimit() {
        var settings = QMuxSettings()
        settings.maxStreamsUni = 3
        #expect(
            Self.code(Self.serverAfter([.stream(id: 14, offset: 0, data: Bytes([1]), fin: false)], settings: settings))
                == 0x4)
        let ceiling = VarInt.max - 1  // a client uni stream id near 2^62
        #expect(Self.code(Self.serverAfter([.stream(id: ceiling, offset: 0, data: Bytes(), fin: true)])) == 0x4)
        #expect(Self.code(Self.serverAfter([.resetStream(id: ceiling, code: VarInt.max, finalSize: 0)])) == 0x4)
        // Opening the 10th stream opens the lower nine too: no more than the limit allows.
        let server = Self.serverAfter([.stream(id: 4 * 9 + 2, offset: 0, data: Bytes([1]), fin: false)])
        #expect(server.closeReason == nil && server.streams.count == 10)
    }

    @Test(
        "stream state: data on our own send-only stream, on a stream never opened; MAX_STREAM_DATA on a receive-only one"
    )
    func streamState() {
        #expect(Self.code(Self.serverAfter([.stream(id: 3, offset: 0, data: Bytes([1]), fin: false)])) == 0x5)
        #expect(Self.code(Self.serverAfter([.stream(id: 1, offset: 0, data: Bytes([1]), fin: false)])) == 0x5)
        #expect(Self.code(Self.serverAfter([.maxStreamData(id: 2, max: 5)])) == 0x5)
        #expect(Self.code(Self.serverAfter([.stopSending(id: 2, code: 0)])) == 0x5)
    }

    @Test("offsets: a gap or an overlap; data past the final size; a reset below what arrived")
    func offsets() {
        let one = Bytes([1])
        #expect(Self.code(Self.serverAfter([.stream(id: 2, offset: 5, data: one, fin: false)])) == 0xa)
        #expect(
            Self.code(
                Self.serverAfter([
                    .stream(id: 2, offset: 0, data: one, fin: false), .stream(id: 2, offset: 0, data: one, fin: false),
                ]))
                == 0xa)
        #expect(
            Self.code(
                Self.serverAfter([
                    .stream(id: 0, offset: 0, data: one, fin: true), .stream(id: 0, offset: 1, data: one, fin: false),
                ]))
                == 0x6)
        // On a stream closed on both sides, late frames are ignored (as QUIC stacks do).
        let late = Self.serverAfter([
            .stream(id: 2, offset: 0, data: one, fin: true), .stream(id: 2, offset: 1, data: one, fin: false),
        ])
        #expect(late.closeReason == nil)
        let two = Bytes([1, 2])
        #expect(
            Self.code(
                Self.serverAfter([
                    .stream(id: 2, offset: 0, data: two, fin: false), .resetStream(id: 2, code: 0, finalSize: 1),
                ]))
                == 0x6)
    }

    @Test("credit frames at the varint ceiling do not overflow")
    func ceilings() {
        let server = Self.serverAfter([.maxData(VarInt.max), .maxStreams(bidirectional: false, max: 1 << 60)])
        #expect(server.closeReason == nil)
        let id = server.openStream(bidirectional: false)!
        server.write(id, Bytes([1, 2, 3]), fin: true)
        server.receive(record: Bytes(QMuxFrame.maxStreamData(id: UInt64(id), max: VarInt.max).encoded()), now: 0)
        #expect(server.nextRecord(now: 0) != nil && server.closeReason == nil)
    }

    @Test("STOP_SENDING: bytes in flight and the reset's final size still return connection credit")
    func stopSendingCredit() throws {
        var settings = QMuxSettings()
        settings.maxData = 3_000
        let thousand = Bytes([UInt8](repeating: 1, count: 1_000))
        let server = Self.serverAfter([.stream(id: 2, offset: 0, data: thousand, fin: false)], settings: settings)
        server.consumed(2, bytes: 1_000)
        server.stopSending(2, code: 0)
        // What the peer had sent before it saw the STOP_SENDING, then its RESET_STREAM.
        let late = [
            QMuxFrame.stream(id: 2, offset: 1_000, data: thousand, fin: false),
            .resetStream(id: 2, code: 0, finalSize: 2_500),
        ]
        server.receive(record: Bytes(late.flatMap { $0.encoded() }), now: 0)
        #expect(server.closeReason == nil)
        // The 1,000 bytes in flight are credited (2,000 of 3,000 used: MAX_DATA moves the window on to
        // 5,000); before, the stopped stream was forgotten and they never were.
        var frames: [QMuxFrame] = []
        while let record = server.nextRecord(now: 0) { frames += try QMuxFrame.decodeRecord(Bytes(record)) }
        #expect(frames.contains(.maxData(5_000)), "\(frames)")
        #expect(server.takeEvents().contains(.streamClosed(2)))
    }

    @Test("a stream limit is raised when its MAX_STREAMS goes out, not before")
    func streamLimitAdvertised() {
        var settings = QMuxSettings()
        settings.maxStreamsUni = 2
        let closing = [
            QMuxFrame.stream(id: 2, offset: 0, data: Bytes([1]), fin: true),
            .stream(id: 6, offset: 0, data: Bytes([1]), fin: true),
        ]
        let server = Self.serverAfter(closing, settings: settings)
        let third = QMuxFrame.stream(id: 10, offset: 0, data: Bytes([1]), fin: false).encoded()
        server.receive(record: Bytes(third), now: 0)
        #expect(Self.code(server) == 0x4)
        let told = Self.serverAfter(closing, settings: settings)
        while told.nextRecord(now: 0) != nil {}
        told.receive(record: Bytes(third), now: 0)
        #expect(told.closeReason == nil)
    }

    @Test("a ping answer stamped before its ping went out (clocks of two calls) does not overflow the RTT")
    func pingClock() {
        let server = Self.serverAfter([])
        server.tick(now: 5_000_000_000)
        _ = server.nextRecord(now: 6_000_000_000)
        server.receive(record: Bytes(QMuxFrame.pingResponse(0).encoded()), now: 5_500_000_000)
        #expect(server.smoothedRTT == 0 && server.closeReason == nil)
    }

    @Test("a peer that never reads: answers to its pings stay one, not a queue")
    func pingFlood() {
        let server = Self.serverAfter((0..<1_000).map { QMuxFrame.ping(UInt64($0)) })
        var records = 0
        while server.nextRecord(now: 0) != nil { records += 1 }
        #expect(records == 1)
    }
}

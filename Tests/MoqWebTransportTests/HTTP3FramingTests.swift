// SPDX-License-Identifier: MIT
import Testing

@testable import MoqWebTransport

@Suite("HTTP/3 frames, SETTINGS, capsules and the WebTransport CONNECT")
struct HTTP3FramingTests {
    @Test("frames arrive whole from any split; grease and unknown types are skipped without being held")
    func frames() throws {
        var wire: [UInt8] = []
        wire += HTTP3Frame.settings(.webTransport()).encoded()
        // A reserved (grease) frame type 0x21 with a 3-byte payload, then HEADERS and DATA.
        wire += [0x21, 0x03, 9, 9, 9]
        wire += HTTP3Frame.headers([0, 0, 0xc0 | 25]).encoded()
        wire += HTTP3Frame.data(WebTransportCapsule.close(code: 7, reason: "bye").encoded()).encoded()
        for split in 1...wire.count {
            var reader = HTTP3FrameReader()
            var frames: [HTTP3Frame] = []
            var offset = 0
            while offset < wire.count {
                reader.append(wire[offset..<min(offset + split, wire.count)])
                offset += split
                while let f = try reader.next() { frames.append(f) }
            }
            #expect(frames.count == 3)
            #expect(frames.first == .settings(.webTransport()))
            #expect(frames.last == .data(WebTransportCapsule.close(code: 7, reason: "bye").encoded()))
        }
        // An unknown frame of 1 GiB is skipped as it streams past: nothing of it is held.
        var reader = HTTP3FrameReader()
        reader.append([0x21, 0x80, 0x40, 0x00, 0x00] + [UInt8](repeating: 1, count: 1000))
        #expect(try reader.next() == nil)
        #expect(reader.buffered == 0)
    }

    @Test("HTTP/2 frame types, oversized frames, HTTP/2 and repeated settings are errors")
    func frameErrors() {
        var reader = HTTP3FrameReader()
        reader.append([0x06, 0x00])  // PING
        #expect(throws: HTTP3Error.self) { try reader.next() }
        var big = HTTP3FrameReader()
        big.append([0x01, 0x80, 0x01, 0x00, 0x00])  // HEADERS of 64 KiB > 16 KiB
        #expect(throws: HTTP3Error.self) { try big.next() }
        #expect(throws: HTTP3Error.self) { try HTTP3Settings(decoding: [0x02, 0x01]) }
        #expect(throws: HTTP3Error.self) { try HTTP3Settings(decoding: [0x08, 0x01, 0x08, 0x01]) }
    }

    @Test("SETTINGS: what moq-dev sends is recognised as WebTransport; a plain HTTP/3 peer is not")
    func settings() throws {
        let ours = HTTP3Settings.webTransport(maxSessions: 4)
        #expect(ours.supportsWebTransport && ours.allowsExtendedConnect)
        #expect(ours[HTTP3Settings.webTransportMaxSessions] == 4)
        #expect(
            !HTTP3Settings([(HTTP3Settings.enableConnectProtocol, 1), (HTTP3Settings.h3Datagram, 1)])
                .supportsWebTransport)
        #expect(
            HTTP3Settings([(HTTP3Settings.h3Datagram, 1), (HTTP3Settings.webTransportEnabledDraft02, 1)])
                .supportsWebTransport)
    }

    @Test("capsules: CLOSE and DRAIN decode, unknown ones are skipped however long, oversize CLOSE is an error")
    func capsules() throws {
        var reader = CapsuleReader()
        let long = String(repeating: "é", count: 600)  // 1200 bytes: the reason is cut to 1024 on a boundary
        reader.append(WebTransportCapsule.close(code: 0xdead_beef, reason: long).encoded())
        guard case .close(let code, let reason)? = try reader.next() else {
            Issue.record("no CLOSE")
            return
        }
        #expect(code == 0xdead_beef && reason.utf8.count == 1024 && reason == String(repeating: "é", count: 512))
        reader.append([0x80, 0x00, 0x78, 0xae, 0x00])  // DRAIN as a 4-byte varint type
        #expect(try reader.next() == .drain)
        reader.append([0x3f, 0x80, 0x10, 0x00, 0x00] + [UInt8](repeating: 0, count: 100))  // unknown, 1 MiB
        #expect(try reader.next() == .unknown(type: 0x3f))
        #expect(reader.buffered == 0)
        var bad = CapsuleReader()
        bad.append([0x68, 0x43, 0x80, 0x01, 0x00, 0x00])
        #expect(throws: HTTP3Error.self) { try bad.next() }
    }

    @Test("the CONNECT is checked as moq-dev's server checks it; protocols round-trip as RFC 8941 strings")
    func connect() throws {
        let request = WebTransportConnect.Request(
            authority: "h:1", path: "/anon", protocols: ["moq-lite-06", "weird \"quoted\" \\ name"])
        #expect(try WebTransportConnect.Request(fields: request.fields) == request)
        var fields = request.fields
        fields[1] = HTTPField(":protocol", "websocket")
        #expect(throws: HTTP3Error.self) { try WebTransportConnect.Request(fields: fields) }
        #expect(throws: HTTP3Error.self) {
            try WebTransportConnect.Request(fields: [HTTPField("origin", "x")] + request.fields)
        }
        #expect(throws: HTTP3Error.self) {
            try WebTransportConnect.Request(fields: request.fields + [HTTPField(":path", "/x")])
        }
        #expect(StructuredList.decode("\"moq-lite-06\";q=1, moql , \"moqt-15\"") == ["moq-lite-06", "moql", "moqt-15"])
        #expect(StructuredList.decode("\"unterminated") == [])
        let response = WebTransportConnect.Response(status: 200, selectedProtocol: "moq-lite-06")
        #expect(try WebTransportConnect.Response(fields: response.fields) == response)
    }

    @Test("stream preambles and datagrams carry the session id (datagrams: the quarter stream id)")
    func preambles() {
        #expect(WebTransportWire.uniStreamHeader(session: 0) == [0x40, 0x54, 0x00])
        #expect(WebTransportWire.bidiStreamHeader(session: 4) == [0x40, 0x41, 0x04])
        let datagram = WebTransportWire.datagram(session: 8, payload: [1, 2])
        #expect(datagram == [2, 1, 2])
        #expect(WebTransportWire.parseDatagram(datagram)! == (2, 1))
    }
}

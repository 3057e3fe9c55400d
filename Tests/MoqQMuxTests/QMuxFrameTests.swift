// SPDX-License-Identifier: MIT
import MoqBase
import MoqQMux
import MoqWire
import Testing

/// The qmux codec against bytes captured from moq-dev's client (moq-ffi 0.4.18, qmux-01 over
/// WebSocket; /work/qmux-research.md's captures).
@Suite("qmux frames")
struct QMuxFrameTests {
    static func hex(_ s: String) -> [UInt8] {
        let digits = Array(s.filter { $0.isHexDigit })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    @Test("the Rust client's transport parameters decode and encode back byte for byte")
    func transportParameters() throws {
        let captured = Self.hex(
            "ff5153300d0a0d0a 35 01 04 80007530 04 04 80100000 05 04 80040000 06 04 80040000 07 04 80040000 "
                + "08 02 4064 09 02 4064 20 02 7ffe c571c59429cd0845 02 7ffe")
        #expect(captured.count == 62)
        let frames = try QMuxFrame.decodeRecord(Bytes(captured))
        guard case .transportParameters(let p)? = frames.first, frames.count == 1 else {
            Issue.record("\(frames)")
            return
        }
        #expect(p.maxIdleTimeoutMs == 30_000 && p.initialMaxData == 1_048_576)
        #expect(p.initialMaxStreamDataBidiLocal == 262_144 && p.initialMaxStreamDataUni == 262_144)
        #expect(p.initialMaxStreamsBidi == 100 && p.initialMaxStreamsUni == 100)
        #expect(p.maxDatagramFrameSize == 16_382 && p.maxRecordSize == 16_382 && !p.resetStreamAt)
        #expect(QMuxFrame.transportParameters(p).encoded() == captured)
    }

    @Test("stream data, an empty FIN, resets, pings and a close, as the Rust side writes them")
    func capturedFrames() throws {
        #expect(
            try QMuxFrame.decodeRecord(Bytes(Self.hex("0f 02 0d 00")))
                == [.stream(id: 2, offset: 13, data: Bytes([]), fin: true)])
        #expect(
            try QMuxFrame.decodeRecord(Bytes(Self.hex("04 01 01 00 05 01 00")))
                == [.resetStream(id: 1, code: 1, finalSize: 0), .stopSending(id: 1, code: 0)])
        #expect(try QMuxFrame.decodeRecord(Bytes(Self.hex("f48c67529ef8c7bd 00"))) == [.ping(0)])
        let close = [0x1d, 0x00, 0x08] + Array("no error".utf8)
        #expect(try QMuxFrame.decodeRecord(Bytes(close)) == [.applicationClose(code: 0, reason: "no error")])
        #expect(QMuxFrame.applicationClose(code: 0, reason: "no error").encoded() == close)
        #expect(QMuxFrame.stream(id: 2, offset: 13, data: Bytes([]), fin: true).encoded() == Self.hex("0f 02 0d 00"))
    }

    @Test("every frame encodes and decodes back, several to a record; STREAM without a length takes the rest")
    func roundTrip() throws {
        var p = QMuxTransportParameters()
        p.initialMaxData = 1 << 20
        p.resetStreamAt = true
        let frames: [QMuxFrame] = [
            .padding, .resetStream(id: 4, code: 2, finalSize: 9), .stopSending(id: 3, code: 7),
            .stream(id: 8, offset: VarInt.max - 3, data: Bytes([1, 2, 3]), fin: false), .maxData(VarInt.max),
            .maxStreamData(id: 2, max: 5), .maxStreams(bidirectional: true, max: 100),
            .maxStreams(bidirectional: false, max: 1 << 60), .dataBlocked(1), .streamDataBlocked(id: 6, limit: 2),
            .streamsBlocked(bidirectional: false, limit: 3), .connectionClose(code: 1002, frameType: 0, reason: "bad"),
            .applicationClose(code: 0, reason: ""), .datagram(Bytes([9, 9])), .transportParameters(p), .ping(7),
            .pingResponse(VarInt.max),
        ]
        let record = frames.flatMap { $0.encoded() }
        #expect(try QMuxFrame.decodeRecord(Bytes(record), limit: 1 << 20) == frames)
        #expect(
            try QMuxFrame.decodeRecord(Bytes([0x08, 0x00, 0x61, 0x62]))
                == [.stream(id: 0, offset: 0, data: Bytes(Array("ab".utf8)), fin: false)])
    }

    @Test("hostile records: QUIC-only frames, truncations, oversize records and parameters, counts past 2^60")
    func hostile() {
        func refuses(_ bytes: [UInt8], limit: Int = 16_382) -> Bool {
            (try? QMuxFrame.decodeRecord(Bytes(bytes), limit: limit)) == nil
        }
        #expect(refuses([0x01]))  // QUIC PING: not carried
        #expect(refuses([0x02, 0, 0, 0, 0]))  // ACK
        #expect(refuses([0x06, 0, 0]))  // CRYPTO
        #expect(refuses([0x0e, 0x00, 0x00, 0x05, 0x61]))  // length beyond the record
        // Offset plus length past 2^62.
        #expect(refuses([0x0c, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x61]))
        #expect(refuses([0x12, 0xd0, 0, 0, 0, 0, 0, 0, 0x01]))  // MAX_STREAMS above 2^60
        #expect(refuses([0x04, 0x01]))  // truncated
        #expect(refuses(Array(repeating: 0, count: 16_383)))  // one byte over the record limit
        #expect(refuses(Self.hex("ff5153300d0a0d0a 03 02 01 00")))  // a QUIC-only parameter (0x02)
        #expect(refuses(Self.hex("ff5153300d0a0d0a 06 01 01 05 01 01 06")))  // the same parameter twice
        #expect(refuses(Self.hex("ff5153300d0a0d0a 0b c571c59429cd0845 02 4000")))  // a record size below 16382
        #expect(refuses(Self.hex("ff5153300d0a0d0a 04 01 02 05")))  // a value that does not fill its length
        // Random bytes never trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? QMuxFrame.decodeRecord(Bytes(bytes))
        }
    }
}

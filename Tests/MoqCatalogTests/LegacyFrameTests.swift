// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqWire
import Testing

@Suite struct LegacyFrameTests {
    @Test func encodesTimestampThenPayload() throws {
        let payload: [UInt8] = [0x00, 0x00, 0x01, 0x84, 0x65, 0x88]
        let frame = try payload.withUnsafeBytes { try LegacyFrame.encode(timestamp: 3_000_000, payload: $0) }
        #expect(frame.array == [0x80, 0x2d, 0xc6, 0xc0] + payload)
        #expect(try LegacyFrame(timestamp: 3_000_000, payload: Bytes(payload)).encoded() == frame)
    }

    /// The trailing frame hang writes at the end of each video group (moq-lite-06.md §6.4).
    @Test func endOfGroupIsTimestampOnly() throws {
        let marker = try LegacyFrame.endOfGroup(timestamp: 3_000_000)
        #expect(marker.array == [0x80, 0x2d, 0xc6, 0xc0])
        let decoded = try LegacyFrame(decoding: marker)
        #expect(decoded.timestamp == 3_000_000)
        #expect(decoded.isEndOfGroup)
        #expect(decoded.payload.isEmpty)
    }

    @Test func decodingSlicesWithoutCopying() throws {
        let wire = Bytes([0x40, 0x64, 0xfc, 0xff, 0xfe])
        let frame = try LegacyFrame(decoding: wire)
        #expect(frame.timestamp == 100)
        #expect(frame.payload.array == [0xfc, 0xff, 0xfe])
        #expect(!frame.isEndOfGroup)
        let wireBase = wire.withUnsafeBytes { $0.baseAddress! }
        let payloadBase = frame.payload.withUnsafeBytes { $0.baseAddress! }
        #expect(payloadBase == wireBase + 2)
    }

    @Test func timestampSizes() throws {
        for timestamp: UInt64 in [0, 63, 64, 16383, 16384, 1 << 30, VarInt.max] {
            let frame = try LegacyFrame.encode(
                timestamp: timestamp, payload: UnsafeRawBufferPointer(start: nil, count: 0))
            #expect(frame.count == VarInt.size(of: timestamp))
            #expect(try LegacyFrame(decoding: frame).timestamp == timestamp)
        }
        #expect(throws: LegacyFrameError.timestampOutOfRange(1 << 62)) {
            try LegacyFrame.endOfGroup(timestamp: 1 << 62)
        }
    }

    @Test func truncatedTimestamp() {
        #expect(throws: LegacyFrameError.truncatedTimestamp) { try LegacyFrame(decoding: Bytes()) }
        #expect(throws: LegacyFrameError.truncatedTimestamp) { try LegacyFrame(decoding: Bytes([0x80, 0x2d])) }
    }
}

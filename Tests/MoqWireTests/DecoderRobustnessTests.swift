// SPDX-License-Identifier: MIT
import MoqWire
import Testing

/// Drip-feeding, splitting and limits (the NIO decoder-verifier idea).
@Suite struct DecoderRobustnessTests {
    static let groupStream: [UInt8] = {
        var out = GroupHeader(subscribeID: 9, sequence: 42).encoded()
        var previous: UInt64 = 0
        for i in 0..<20 {
            let ts = UInt64(1_000_000 + i * 33_333)
            let payload = Bytes((0..<(i * 97 % 300)).map { UInt8(truncatingIfNeeded: $0 &+ i) })
            let frame = Frame(timestamp: ts, payload: payload)
            out += frame.encodedHeader(previous: previous)! + payload.array
            previous = ts
        }
        return out
    }()

    func decodeAll(_ chunks: [[UInt8]]) throws -> [FrameStreamEvent] {
        var decoder = FrameDecoder(expectHeader: true)
        var events: [FrameStreamEvent] = []
        for (i, chunk) in chunks.enumerated() {
            events += try chunk.withUnsafeBytes { try decoder.feed($0, fin: i == chunks.count - 1) }
        }
        #expect(decoder.isFinished)
        return events
    }

    @Test func dripFedGroupStreamDecodesIdentically() throws {
        let whole = try decodeAll([Self.groupStream])
        #expect(whole.count == 21)
        let drip = try decodeAll(Self.groupStream.map { [$0] } + [[]])
        #expect(drip == whole)
    }

    @Test func everySplitPointDecodesIdentically() throws {
        let whole = try decodeAll([Self.groupStream])
        for split in 1..<Self.groupStream.count {
            let parts = [Array(Self.groupStream[..<split]), Array(Self.groupStream[split...])]
            #expect(try decodeAll(parts) == whole, "split at \(split)")
        }
    }

    @Test func finInsideAFrameIsTruncated() {
        let cut = Array(Self.groupStream.dropLast(3))
        var decoder = FrameDecoder(expectHeader: true)
        #expect(throws: DecodeError.truncated) { _ = try cut.withUnsafeBytes { try decoder.feed($0, fin: true) } }
    }

    @Test func emptyGroupStreamIsTruncated() {
        var decoder = FrameDecoder(expectHeader: true)
        #expect(throws: DecodeError.truncated) {
            _ = try decoder.feed(UnsafeRawBufferPointer(start: nil, count: 0), fin: true)
        }
    }

    @Test func oversizedFrameRefusedBeforeItsPayload() {
        var decoder = FrameDecoder(expectHeader: false, frameLimit: 1000)
        let header = hex("00 80 00 10 00")  // delta 0, size 4096
        #expect(throws: DecodeError.tooLarge(size: 4096, limit: 1000)) {
            _ = try header.withUnsafeBytes { try decoder.feed($0, fin: false) }
        }
    }

    @Test func largeFrameArrivingInPiecesIsAssembled() throws {
        let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let frame = Frame(timestamp: 5, payload: Bytes(payload))
        let stream = frame.encodedHeader(previous: 0)! + payload
        var decoder = FrameDecoder(expectHeader: false)
        var events: [FrameStreamEvent] = []
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + 1200)
            events += try stream[offset..<end].withUnsafeBytes { try decoder.feed($0, fin: end == stream.count) }
            offset = end
        }
        #expect(events == [.frame(frame)])
    }

    @Test func controlBufferYieldsMessagesOnlyWhenComplete() throws {
        var buffer = StreamBuffer()
        let bytes =
            hex("02") + Subscribe(id: 1, broadcast: "room/alice", track: "video").encoded()
            + SubscribeUpdate(range: SubscriptionRange(priority: 9)).encoded()
        var messages: [String] = []
        var sawType = false
        for b in bytes {
            buffer.append([b])
            if !sawType, let t = buffer.readVarInt() {
                #expect(t == BidiStreamType.subscribe.rawValue)
                sawType = true
                continue
            }
            if messages.isEmpty, let s = try buffer.next(Subscribe.self) {
                messages.append(s.broadcast)
            } else if messages.count == 1, let u = try buffer.next(SubscribeUpdate.self) {
                messages.append("update \(u.range.priority)")
            }
        }
        #expect(messages == ["room/alice", "update 9"])
        #expect(buffer.buffered == 0)
    }

    @Test func controlBufferRefusesOversizeBeforeBuffering() {
        var buffer = StreamBuffer(limit: 100)
        buffer.append(hex("80 01 00 00"))  // declares 65536
        #expect(throws: DecodeError.tooLarge(size: 65536, limit: 100)) { try buffer.next(Subscribe.self) }
    }

    @Test func trailingBytesInsideAMessageAreRejected() {
        var buffer = StreamBuffer()
        buffer.append(hex("04 00 00 01 ff"))  // ANNOUNCE_OK hop 0 active 0 + one stray byte
        #expect(throws: DecodeError.trailingBytes(2)) { try buffer.next(AnnounceOk.self) }
    }

    @Test func shortBodyIsRejected() {
        var r = reader(hex("03 01 02"))  // TRACK_INFO missing its timescale... but size says 3 and only 2 present
        #expect(throws: DecodeError.short) { try TrackInfo.decodeFramed(from: &r) }
        var truncatedBody = reader(hex("02 7f 00"))  // size 2: prio + max_age, no timescale inside the body
        #expect(throws: DecodeError.short) { try TrackInfo.decodeFramed(from: &truncatedBody) }
    }

    @Test func invalidUTF8IsRejected() {
        var r = reader(hex("03 02 ff fe"))
        #expect(throws: DecodeError.invalidString) { try AnnounceRequest.decodeFramed(from: &r) }
    }

    @Test func tooManyHops() {
        var w = WireWriter()
        w.writeVarInt(0)
        w.writeSizePrefixed {
            $0.writeString("x")
            $0.writeVarInt(33)
            for i in 0..<33 { $0.writeVarInt(i) }
            $0.writeVarInt(0)
            $0.writeVarInt(0)
        }
        var r = reader(w.bytes)
        #expect(throws: DecodeError.tooMany("hops", limit: 32)) { try Announcement.decode(from: &r) }
    }
}

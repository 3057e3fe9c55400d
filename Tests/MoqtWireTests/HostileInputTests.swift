// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import MoqtWire
import Testing

/// What a hostile peer can send: every bound refused with a decode error, nothing trapping.
@Suite("MoQT wire: hostile input")
struct HostileInputTests {
    /// A framed payload of `type`.
    static func framed(_ type: UInt64, _ payload: [UInt8]) -> [UInt8] {
        ControlFraming.frame(type: type, payload: payload) ?? []
    }

    @Test("an unknown type, trailing bytes and a short payload are decode errors")
    func framingErrors() {
        #expect(throws: DecodeError.unknownType(0x3F)) {
            try ControlMessage.decode(type: 0x3F, payload: Bytes([0]), version: .draft16)
        }
        #expect(throws: DecodeError.trailingBytes(1)) {
            try ControlMessage.decode(type: 0x0A, payload: Bytes([0, 0]), version: .draft16)
        }
        #expect(throws: DecodeError.short) {
            try ControlMessage.decode(type: 0x0B, payload: Bytes([0]), version: .draft16)
        }
        // Draft-16 has no FETCH_ERROR: 0x19 is unknown there.
        #expect(throws: DecodeError.unknownType(0x19)) {
            try ControlMessage.decode(type: 0x19, payload: Bytes([0, 0, 0]), version: .draft16)
        }
        #expect(ControlFraming.frame(type: 0x03, payload: [UInt8](repeating: 0, count: 65_536)) == nil)
    }

    @Test("parameter floods, oversized values and a delta past the varint ceiling are refused")
    func parameterBounds() {
        var w = WireWriter()
        w.writeVarInt(65)
        for i in 0..<65 {
            w.writeVarInt(i == 0 ? 2 : 0)
            w.writeVarInt(0)
        }
        var r = WireReader(Bytes(w.bytes))
        #expect(throws: DecodeError.tooMany("parameters", limit: 64)) {
            try KeyValuePairs.decode(from: &r, version: .draft16)
        }
        // Uncounted (track extensions): the flood is cut at the same bound.
        var flood = WireWriter()
        for _ in 0..<100 {
            flood.writeVarInt(0)
            flood.writeVarInt(0)
        }
        var u = WireReader(Bytes(flood.bytes))
        #expect(throws: DecodeError.tooMany("parameters", limit: 64)) {
            try KeyValuePairs.decode(from: &u, version: .draft16, counted: false)
        }
        var big = WireWriter()
        big.writeVarInt(1)
        big.writeVarInt(1)
        big.writeVarInt(70_000)
        var b = WireReader(Bytes(big.bytes))
        #expect(throws: DecodeError.tooLarge(size: 70_000, limit: 65_535)) {
            try KeyValuePairs.decode(from: &b, version: .draft14)
        }
        var past = WireWriter()
        past.writeVarInt(2)
        past.writeVarInt(VarInt.max - 1)  // even: a varint follows
        past.writeVarInt(0)
        past.writeVarInt(2)  // Δ past 2^62 − 1
        past.writeVarInt(0)
        var p = WireReader(Bytes(past.bytes))
        #expect(throws: DecodeError.self) { try KeyValuePairs.decode(from: &p, version: .draft16) }
    }

    @Test("a draft-16 SUBSCRIBE with a parameter twice, a forward of 2 or a bad filter is refused")
    func subscribeParameters() {
        func subscribe(_ params: [KeyValuePairs.Pair]) -> Bytes {
            var w = WireWriter()
            w.writeVarInt(0)
            TrackNamespace.roomCam.encode(into: &w)
            w.writeVarInt(1)
            w.writeBytes([0x74])
            KeyValuePairs(params).encode(into: &w, version: .draft16)
            return Bytes(w.bytes)
        }
        #expect(throws: DecodeError.duplicate(MessageParameter.forward)) {
            try ControlMessage.decode(
                type: 0x03, payload: subscribe([.init(0x10, .varint(1)), .init(0x10, .varint(1))]), version: .draft16)
        }
        #expect(throws: DecodeError.invalidValue("forward 2")) {
            try ControlMessage.decode(type: 0x03, payload: subscribe([.init(0x10, .varint(2))]), version: .draft16)
        }
        #expect(throws: DecodeError.invalidValue("filter type 9")) {
            try ControlMessage.decode(
                type: 0x03, payload: subscribe([.init(0x21, .bytes(Bytes([9])))]), version: .draft16)
        }
        #expect(throws: DecodeError.self) {
            // A range ending before it starts.
            try ControlMessage.decode(
                type: 0x03, payload: subscribe([.init(0x21, .bytes(Bytes([4, 5, 0, 4])))]), version: .draft16)
        }
    }

    @Test("namespaces past 32 fields or 4096 bytes, and a track name past the Full Track Name bound, are refused")
    func namespaceBounds() {
        var many = WireWriter()
        TrackNamespace((0..<33).map { _ in Bytes("a") }).encode(into: &many)
        var r = WireReader(Bytes(many.bytes))
        #expect(throws: DecodeError.tooLarge(size: 33, limit: 32)) { try TrackNamespace.decode(from: &r) }
        var long = WireWriter()
        TrackNamespace([Bytes([UInt8](repeating: 0x61, count: 3000)), Bytes([UInt8](repeating: 0x61, count: 1200))])
            .encode(into: &long)
        var l = WireReader(Bytes(long.bytes))
        #expect(throws: DecodeError.tooLarge(size: 4200, limit: 4096)) { try TrackNamespace.decode(from: &l) }
        let name = ControlMessage.subscribe(
            Subscribe(
                requestID: 0, namespace: TrackNamespace([Bytes([UInt8](repeating: 0x61, count: 4000))]),
                trackName: Bytes([UInt8](repeating: 0x62, count: 200))))
        #expect(throws: DecodeError.tooLarge(size: 200, limit: 96)) {
            try decodeFramed(name.encoded(version: .draft14) ?? [], .draft14)
        }
    }

    @Test("reason phrases: a longer one is cut at a character boundary when sent and refused when received")
    func reasonPhrases() throws {
        let long = String(repeating: "é", count: 600)  // 1200 bytes
        let message = ControlMessage.publishDone(PublishDone(requestID: 0, statusCode: 0, streamCount: 0, reason: long))
        guard case .publishDone(let done) = try decodeFramed(try #require(message.encoded(version: .draft14)), .draft14)
        else {
            Issue.record("not a PUBLISH_DONE")
            return
        }
        #expect(done.reason == String(repeating: "é", count: 512))
        var w = WireWriter()
        for _ in 0..<3 { w.writeVarInt(0) }
        w.writeVarInt(1025)
        w.writeBytes([UInt8](repeating: 0x61, count: 1025))
        #expect(throws: DecodeError.tooLarge(size: 1025, limit: 1024)) {
            try ControlMessage.decode(type: 0x0B, payload: Bytes(w.bytes), version: .draft14)
        }
    }

    @Test(
        "subgroup streams: reserved types, payloads over the bound (refused before they arrive), ids past the ceiling")
    func subgroupBounds() throws {
        for type: UInt64 in [0x16, 0x17, 0x1E, 0x1F, 0x0F, 0x40, 0x30] {
            var d = SubgroupStreamDecoder(version: .draft14)
            #expect(throws: DecodeError.unknownType(type), "type 0x\(String(type, radix: 16))") {
                var w = WireWriter()
                w.writeVarInt(type)
                w.writeBytes([0, 0, 0, 0])
                _ = try d.feed(w.bytes)
            }
        }
        // 0x30…0x3D exist from draft-15 on: no priority byte.
        var d16 = SubgroupStreamDecoder(version: .draft16)
        let header = try d16.feed(wire("38 01 02"))
        #expect(header == [.header(SubgroupHeader(trackAlias: 1, group: 2, publisherPriority: nil))])
        // A declared 40 MB payload is refused at its length, before any of it is buffered.
        var big = SubgroupStreamDecoder(version: .draft16)
        var w = WireWriter()
        SubgroupHeader(trackAlias: 0, group: 0).encode(into: &w, version: .draft16)
        w.writeVarInt(0)
        w.writeVarInt(40_000_000)
        #expect(throws: DecodeError.tooLarge(size: 40_000_000, limit: 32 * 1024 * 1024)) { _ = try big.feed(w.bytes) }
        // Object ids: the first at the ceiling is fine; one past it is refused.
        var ids = SubgroupStreamDecoder(version: .draft14)
        var s = WireWriter()
        SubgroupHeader(trackAlias: 0, group: 0).encode(into: &s, version: .draft14)
        s.writeVarInt(VarInt.max)
        s.writeVarInt(1)
        s.writeBytes([0x61])
        let first = try ids.feed(s.bytes)
        #expect(first.count == 2)
        #expect(throws: DecodeError.invalidValue("object id past 2^62-1")) { _ = try ids.feed([0x00, 0x01, 0x62]) }
        // A stream ending inside an object.
        var cut = SubgroupStreamDecoder(version: .draft14)
        #expect(throws: DecodeError.truncated) { _ = try cut.feed(wire("18 00 00 00 00 05 61"), fin: true) }
        // Draft-16 has no "does not exist" status.
        var status = SubgroupStreamDecoder(version: .draft16)
        #expect(throws: DecodeError.invalidValue("object status 1")) {
            _ = try status.feed(wire("18 00 00 00 00 00 01"))
        }
    }

    @Test("a subgroup stream fed a byte at a time yields what it yields whole")
    func subgroupDrip() throws {
        let header = SubgroupHeader(
            trackAlias: 7, group: 9, subgroup: .id(3), publisherPriority: 5, hasExtensions: true)
        let objects = [
            SubgroupObject(id: 0, payload: Bytes("first")),
            SubgroupObject(id: 4, extensions: KeyValuePairs([.init(0x3C, .varint(2))]), payload: Bytes("gap")),
            SubgroupObject(id: 5, payload: Bytes(), status: .endOfGroup),
        ]
        for version in MoqtVersion.allCases {
            var w = WireWriter()
            header.encode(into: &w, version: version)
            var previous: UInt64?
            for o in objects {
                o.encode(into: &w, after: previous, header: header, version: version)
                previous = o.id
            }
            var whole = SubgroupStreamDecoder(version: version)
            let all = try whole.feed(w.bytes, fin: true)
            var drip = SubgroupStreamDecoder(version: version)
            var dripped: [SubgroupStreamDecoder.Event] = []
            for byte in w.bytes { dripped += try drip.feed([byte]) }
            dripped += try drip.feed([], fin: true)
            #expect(all == [.header(header)] + objects.map { .object($0) })
            #expect(dripped == all)
            #expect(drip.buffered == 0)
        }
    }
}

// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import MoqtWire
import Testing

/// Fetch streams (`0x05 | request id`, then objects that name their group): draft-14's fixed fields
/// and draft-16's serialization flags, whole or a byte at a time, and what a hostile peer may send.
@Suite("MoQT wire: fetch streams")
struct FetchStreamTests {
    static let ceiling = VarInt.max

    static let objects = [
        FetchObject(group: 4, id: 0, publisherPriority: 7, payload: Bytes("key")),
        FetchObject(
            group: 4, subgroup: ceiling, id: 1, extensions: KeyValuePairs([.init(0x3C, .varint(ceiling))]),
            payload: Bytes("delta")),
        FetchObject(group: ceiling, id: ceiling, publisherPriority: 255, payload: Bytes("last")),
    ]

    static func stream(_ version: MoqtVersion, requestID: UInt64 = ceiling) -> [UInt8] {
        var w = WireWriter()
        FetchHeader.encode(requestID: requestID, into: &w)
        for object in objects { object.encode(into: &w, version: version) }
        return w.bytes
    }

    @Test("objects round-trip, whole and a byte at a time, on both drafts", arguments: MoqtVersion.allCases)
    func roundTrip(_ version: MoqtVersion) throws {
        let bytes = Self.stream(version)
        let expected: [FetchStreamDecoder.Event] = [.header(requestID: Self.ceiling)] + Self.objects.map { .object($0) }
        var whole = FetchStreamDecoder(version: version)
        #expect(try whole.feed(bytes, fin: true) == expected)
        var drip = FetchStreamDecoder(version: version)
        var events: [FetchStreamDecoder.Event] = []
        for byte in bytes { events += try drip.feed([byte]) }
        events += try drip.feed([], fin: true)
        #expect(events == expected)
    }

    @Test("draft-14: an empty object carries its status")
    func draft14Status() throws {
        var w = WireWriter()
        FetchHeader.encode(requestID: 1, into: &w)
        FetchObject(group: 2, id: 3, payload: Bytes(), status: .endOfGroup).encode(into: &w, version: .draft14)
        var d = FetchStreamDecoder(version: .draft14)
        #expect(
            try d.feed(w.bytes, fin: true) == [
                .header(requestID: 1), .object(FetchObject(group: 2, id: 3, payload: Bytes(), status: .endOfGroup)),
            ])
    }

    @Test(
        "draft-16: flags that refer to the object before (group, id + 1, priority, subgroup + 1), and the end-of-range values"
    )
    func draft16Flags() throws {
        // Object 1: every field; object 2: subgroup = previous + 1, id = previous + 1, same group and priority.
        let bytes = wire("05 01  1F 04 03 00 09 01 \"a\"  02 01 \"b\"  40 8C 05 06  80 00 01 0C 07 08")
        var d = FetchStreamDecoder(version: .draft16)
        #expect(
            try d.feed(bytes, fin: true) == [
                .header(requestID: 1),
                .object(FetchObject(group: 4, subgroup: 3, id: 0, publisherPriority: 9, payload: Bytes("a"))),
                .object(FetchObject(group: 4, subgroup: 4, id: 1, publisherPriority: 9, payload: Bytes("b"))),
                .endOfRange(Location(group: 5, object: 6), known: true),
                .endOfRange(Location(group: 7, object: 8), known: false),
            ])
    }

    @Test(
        "hostile: a first object that refers back, unknown flags, a wrong type, lengths over the bounds, ids past the ceiling, a cut stream"
    )
    func hostile() throws {
        // The first object may not take its group (or id, priority, subgroup) from one before it.
        for flags: UInt8 in [0x14, 0x1D, 0x1E, 0x0C] {
            var d = FetchStreamDecoder(version: .draft16)
            #expect(throws: DecodeError.self, "flags \(flags)") {
                _ = try d.feed([0x05, 0x01, flags, 0x01, 0x01, 0x01, 0x00])
            }
        }
        var unknown = FetchStreamDecoder(version: .draft16)
        #expect(throws: DecodeError.invalidValue("fetch serialization flags 0x80")) {
            _ = try unknown.feed(wire("05 01 40 80"))
        }
        var wrongType = FetchStreamDecoder(version: .draft14)
        #expect(throws: DecodeError.unknownType(0x04)) { _ = try wrongType.feed([0x04, 0x01]) }
        // A 40 MB payload is refused at its declared length, before any of it arrives.
        for version in MoqtVersion.allCases {
            var w = WireWriter()
            FetchHeader.encode(requestID: 0, into: &w)
            if version == .draft16 { w.writeVarInt(0x1C) }
            w.writeVarInt(0)
            if version == .draft14 { w.writeVarInt(0) }
            w.writeVarInt(0)
            w.writeUInt8(0)
            if version == .draft14 { w.writeVarInt(0) }
            w.writeVarInt(40_000_000)
            var big = FetchStreamDecoder(version: version)
            #expect(throws: DecodeError.tooLarge(size: 40_000_000, limit: MoqtLimits.maxObjectPayload), "\(version)") {
                _ = try big.feed(w.bytes)
            }
        }
        // Object id + 1 past 2^62-1.
        var past = FetchStreamDecoder(version: .draft16)
        var w = WireWriter()
        FetchHeader.encode(requestID: 0, into: &w)
        FetchObject(group: 0, id: Self.ceiling, payload: Bytes("x")).encode(into: &w, version: .draft16)
        w.writeBytes([0x18, 0x00, 0x00, 0x01, 0x79])  // same group, id = previous + 1
        #expect(throws: DecodeError.invalidValue("object id past 2^62-1")) { _ = try past.feed(w.bytes) }
        // A stream cut inside an object, or before its header.
        var cut = FetchStreamDecoder(version: .draft14)
        #expect(throws: DecodeError.truncated) { _ = try cut.feed(Array(Self.stream(.draft14).dropLast()), fin: true) }
        var empty = FetchStreamDecoder(version: .draft14)
        #expect(throws: DecodeError.truncated) { _ = try empty.feed([], fin: true) }
    }
}

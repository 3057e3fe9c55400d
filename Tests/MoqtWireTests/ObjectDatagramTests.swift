// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import MoqtWire
import Testing

/// OBJECT_DATAGRAM on both drafts: the type's flags, the bytes moq-dev writes for a datagram group,
/// statuses, and what a hostile peer may send (docs/ietf/moqt-wire.md §7.4).
@Suite("MoQT wire: object datagrams")
struct ObjectDatagramTests {
    static let ceiling = VarInt.max

    static let datagrams: [ObjectDatagram] = [
        ObjectDatagram(trackAlias: 3, group: 42, body: .payload(Bytes("hello"))),
        ObjectDatagram(
            trackAlias: ceiling, group: ceiling, object: ceiling, publisherPriority: 255, endOfGroup: false,
            extensions: KeyValuePairs([.init(0x3C, .varint(ceiling))]), body: .payload(Bytes())),
        ObjectDatagram(trackAlias: 1, group: 2, object: 7, endOfGroup: false, body: .status(.endOfTrack)),
        ObjectDatagram(trackAlias: 1, group: 2, object: 9, endOfGroup: false, body: .payload(Bytes([0, 1, 2]))),
    ]

    @Test("datagrams round-trip on both drafts, fields at the varint ceiling", arguments: MoqtVersion.allCases)
    func roundTrip(_ version: MoqtVersion) throws {
        for datagram in Self.datagrams {
            let bytes = datagram.encoded(version: version)
            #expect(try ObjectDatagram.decode(Bytes(bytes), version: version) == datagram, "\(datagram)")
        }
    }

    @Test("a datagram group: object 0 omitted, end of group, priority 0 (type 0x06 on both drafts)")
    func datagramGroup() throws {
        let datagram = ObjectDatagram(trackAlias: 3, group: 42, body: .payload(Bytes("hi")))
        for version in MoqtVersion.allCases {
            #expect(datagram.encoded(version: version) == wire("06 03 2A 00 \"hi\""), "\(version)")
        }
    }

    @Test("what moq-ffi 0.4.18 sends on drafts 14 and 16 (captured): type 0x07, priority 128, Timestamp 0x10 in µs")
    func moqFfiDatagram() throws {
        for version in MoqtVersion.allCases {
            let datagram = try ObjectDatagram.decode(
                Bytes(wire("07 02 01 80 05 10 80 00 82 35 \"g1f0\"")), version: version)
            #expect(datagram.trackAlias == 2 && datagram.group == 1 && datagram.object == 0)
            #expect(datagram.publisherPriority == 128 && datagram.endOfGroup)
            #expect(datagram.timestamp == 33_333)
            #expect(datagram.body == .payload(Bytes("g1f0")))
        }
        // The older key.
        let older = try ObjectDatagram.decode(Bytes(wire("07 02 01 80 02 06 05 \"x\"")), version: .draft16)
        #expect(older.timestamp == 5)
    }

    @Test("draft-16 omits a default priority (0x08); draft-14 has no such bit and writes 0")
    func defaultPriority() throws {
        let datagram = ObjectDatagram(trackAlias: 1, group: 2, publisherPriority: nil, body: .payload(Bytes("x")))
        #expect(datagram.encoded(version: .draft16) == wire("0E 01 02 \"x\""))
        #expect(datagram.encoded(version: .draft14) == wire("06 01 02 00 \"x\""))
        #expect(try ObjectDatagram.decode(Bytes(wire("0E 01 02 \"x\"")), version: .draft16) == datagram)
        #expect(throws: DecodeError.unknownType(0x0E)) {
            try ObjectDatagram.decode(Bytes(wire("0E 01 02 \"x\"")), version: .draft14)
        }
    }

    @Test("statuses: draft-14 always names the object (0x20); draft-16 may omit object 0 (0x24)")
    func statuses() throws {
        let status = ObjectDatagram(trackAlias: 1, group: 2, endOfGroup: false, body: .status(.endOfGroup))
        #expect(status.encoded(version: .draft14) == wire("20 01 02 00 00 03"))
        #expect(status.encoded(version: .draft16) == wire("24 01 02 00 03"))
        for version in MoqtVersion.allCases {
            #expect(try ObjectDatagram.decode(Bytes(status.encoded(version: version)), version: version) == status)
        }
        // A status never ends a group: the flag is not written.
        var ending = status
        ending.endOfGroup = true
        #expect(ending.encoded(version: .draft16) == wire("24 01 02 00 03"))
        // Draft-14's "does not exist" is gone on draft-16.
        #expect(
            try ObjectDatagram.decode(Bytes(wire("20 01 02 00 00 01")), version: .draft14).body
                == .status(.doesNotExist))
        #expect(throws: DecodeError.self) {
            try ObjectDatagram.decode(Bytes(wire("24 01 02 00 01")), version: .draft16)
        }
    }

    @Test(
        "hostile: undefined types, a status that ends its group, empty or oversized extensions, cut fields, bytes after a status"
    )
    func hostile() throws {
        // Draft-14 defines 0x00–0x07, 0x20 and 0x21 only.
        for type: UInt8 in [0x08, 0x0F, 0x10, 0x22, 0x24, 0x25, 0x3F] {
            #expect(throws: DecodeError.self, "d14 \(type)") {
                try ObjectDatagram.decode(Bytes([type, 1, 2, 0, 0, 0]), version: .draft14)
            }
        }
        // Draft-16: the reserved 0x10, bits past 0x2F, and STATUS with END_OF_GROUP.
        for type: UInt8 in [0x10, 0x1F, 0x22, 0x23, 0x26, 0x2E, 0x30] {
            #expect(throws: DecodeError.self, "d16 \(type)") {
                try ObjectDatagram.decode(Bytes([type, 1, 2, 0, 0, 0]), version: .draft16)
            }
        }
        for version in MoqtVersion.allCases {
            // Extensions present but empty.
            #expect(throws: DecodeError.invalidValue("empty extensions on a datagram")) {
                try ObjectDatagram.decode(Bytes(wire("05 01 02 00 00 \"x\"")), version: version)
            }
            // An extensions length past the bound, and one past the datagram.
            #expect(throws: DecodeError.self) {
                try ObjectDatagram.decode(Bytes(wire("05 01 02 00 C0 00 00 00 00 00 10 00")), version: version)
            }
            #expect(throws: DecodeError.short) {
                try ObjectDatagram.decode(Bytes(wire("05 01 02 00 09 3C 01")), version: version)
            }
            // Every prefix of a datagram's header is cut.
            let bytes = wire("01 C0 00 00 00 00 00 00 01 02 03 00 02 3C 00 \"p\"")
            for length in 0..<15 {
                #expect(throws: DecodeError.self, "\(version) \(length)") {
                    try ObjectDatagram.decode(Bytes(Array(bytes.prefix(length))), version: version)
                }
            }
        }
        #expect(throws: DecodeError.trailingBytes(1)) {
            try ObjectDatagram.decode(Bytes(wire("24 01 02 00 03 FF")), version: .draft16)
        }
        #expect(throws: DecodeError.self) {
            try ObjectDatagram.decode(Bytes(wire("24 01 02 00 07")), version: .draft16)
        }
    }
}

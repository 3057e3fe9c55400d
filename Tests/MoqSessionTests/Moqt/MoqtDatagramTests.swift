// SPDX-License-Identifier: MIT
import MoqBase
import MoqModel
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire
import Testing

/// OBJECT_DATAGRAMs between two MoQ Transport cores: a datagram group (one frame) goes as one datagram
/// when the peer takes datagrams and it fits, else on a stream; what a hostile peer sends as datagrams
/// is dropped and counted, and closes nothing.
@Suite("MoQT session: datagrams")
struct MoqtDatagramTests {
    static let versions = MoqtVersion.allCases

    @Test("datagram groups travel as OBJECT_DATAGRAMs (object 0, end of group) when they fit", arguments: versions)
    func datagramsWhenTheyFit(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        let (handle, remote) = pair.subscribeT()
        pair.run()
        track.writeDatagram(Bytes("dg-0"), timestamp: 1)
        track.writeDatagram(Bytes(String(repeating: "z", count: 5000)), timestamp: 2)  // too large: a stream
        let group = track.appendGroup()
        group.write(Bytes("s"), timestamp: 3)
        group.finish()
        track.writeDatagram(Bytes("dg-3"), timestamp: 4)
        pair.run()
        #expect(pair.contents(remote).map(\.0) == [0, 1, 2, 3])
        #expect(pair.contents(remote).first?.1 == ["dg-0"])
        #expect(pair.contents(remote).last?.1 == ["dg-3"])
        #expect(remote.group(sequence: 0)?.isDatagram == true)
        #expect(pair.server.counters.datagramsSent == 2)
        #expect(pair.client.counters.datagramsReceived == 2)
        #expect(pair.server.counters.groupsSent == 2)
        #expect(remote.frames(of: try #require(remote.group(sequence: 3)), from: 0).frames.first?.timestamp == 4)
        // On the wire, moq-ffi's form: type 0x07 (properties, end of group, object 0 omitted), the alias, the
        // group, priority 0, the properties (Timestamp 0x10 = 1), the payload.
        let datagrams = pair.link.client.log.compactMap { e -> [UInt8]? in
            if case .datagram(let bytes) = e { bytes } else { nil }
        }
        let alias = try #require(handle.requestID)
        var expected = WireWriter()
        for v: UInt64 in [0x07, alias, 0] { expected.writeVarInt(v) }
        expected.writeBytes(Bytes([0x00, 0x02, 0x10, 0x01]))
        expected.writeBytes(Bytes("dg-0"))
        #expect(datagrams.first == expected.bytes)
    }

    @Test("without QUIC datagrams, datagram groups go on streams", arguments: versions)
    func streamsWithoutDatagrams(version: MoqtVersion) {
        let pair = MoqtPair(version, datagrams: false)
        let track = pair.serverBroadcast("b").createTrack("t")
        let (_, remote) = pair.subscribeT()
        pair.run()
        track.writeDatagram(Bytes("x"), timestamp: 1)
        pair.run()
        #expect(pair.server.counters.datagramsSent == 0)
        #expect(pair.contents(remote).map(\.1) == [["x"]])
    }

    @Test(
        "hostile datagrams: undecodable, unknown alias, statuses, objects past 0, a group not ended, a group twice, the ceiling — dropped and counted",
        arguments: versions)
    func hostile(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        _ = pair.serverBroadcast("b").createTrack("t")
        let (handle, remote) = pair.subscribeT()
        pair.run()
        let alias = try #require(handle.requestID)
        func send(_ datagram: ObjectDatagram) {
            _ = pair.link.server.sendDatagram(Bytes(datagram.encoded(version: version)))
        }
        _ = pair.link.server.sendDatagram(Bytes([0xC0]))  // a cut varint
        _ = pair.link.server.sendDatagram(Bytes([0x3F, 0x01, 0x02]))  // no such type
        _ = pair.link.server.sendDatagram(Bytes([0x05, UInt8(alias), 0x02, 0x00, 0x00]))  // empty extensions
        send(ObjectDatagram(trackAlias: alias &+ 1, group: 1, body: .payload(Bytes("other"))))
        send(ObjectDatagram(trackAlias: alias, group: 2, endOfGroup: false, body: .status(.endOfGroup)))
        send(ObjectDatagram(trackAlias: alias, group: 3, object: 1, body: .payload(Bytes("second"))))
        send(ObjectDatagram(trackAlias: alias, group: 5, endOfGroup: false, body: .payload(Bytes("more to come"))))
        send(ObjectDatagram(trackAlias: alias, group: 4, body: .payload(Bytes("first"))))
        send(ObjectDatagram(trackAlias: alias, group: 4, body: .payload(Bytes("again"))))
        send(ObjectDatagram(trackAlias: alias, group: VarInt.max, body: .payload(Bytes("top"))))
        send(ObjectDatagram(trackAlias: VarInt.max, group: VarInt.max, body: .payload(Bytes("nobody"))))
        pair.run()
        #expect(pair.client.isReady && pair.server.isReady)
        #expect(pair.client.counters.malformedDatagrams == 3)
        #expect(pair.client.counters.datagramsIgnored == 6)
        #expect(pair.client.counters.datagramsReceived == 2)
        #expect(pair.contents(remote).map(\.1) == [["first"], ["top"]])
    }
}

// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import MoqtWire
import Testing

/// Byte-exact against docs/ietf/moqt-wire.md's examples (computed from the drafts and moq-dev's
/// encoders) and against bytes moq-dev (moq-ffi 0.4.18) sent on this machine (docs/ietf/pypi-peer.md).
@Suite("MoQT wire: byte vectors from the drafts and from moq-dev")
struct VectorTests {
    static let solicit = KeyValuePairs.Pair(SetupParameter.solicit, .varint(1))
    static let maxRequests = KeyValuePairs.Pair(SetupParameter.maxRequestID, .varint(0xFFFF_FFFF))
    static let implementation = KeyValuePairs.Pair(SetupParameter.implementation, .bytes(Bytes("moq-lite-rs")))

    @Test("CLIENT_SETUP: draft-14 lists versions and writes keys absolute; draft-16 writes sorted deltas")
    func clientSetup() throws {
        let path = KeyValuePairs.Pair(SetupParameter.path, .bytes(Bytes("/anon")))
        let d14 = ControlMessage.clientSetup(
            ClientSetup(
                versions: [MoqtVersion.draft14.code],
                parameters: KeyValuePairs([path, Self.maxRequests, Self.implementation, Self.solicit])))
        #expect(
            d14.encoded(version: .draft14)
                == wire(
                    #"20 00 2c 01 c0 00 00 00 ff 00 00 0e 04 01 05 2f 61 6e 6f 6e 02 c0 00 00 00 ff ff ff ff 07 0b "moq-lite-rs" 80 04 0b 5a 01"#
                ))
        // Draft-16 sorts whatever order the pairs were given in.
        let d16 = ControlMessage.clientSetup(
            ClientSetup(parameters: KeyValuePairs([Self.solicit, Self.implementation, path, Self.maxRequests])))
        let expected16 = wire(
            #"20 00 23 04 01 05 "/anon" 01 c0 00 00 00 ff ff ff ff 05 0b "moq-lite-rs" 80 04 0b 53 01"#)
        #expect(d16.encoded(version: .draft16) == expected16)
        guard case .clientSetup(let decoded) = try decodeFramed(expected16, .draft16) else {
            Issue.record("not a CLIENT_SETUP")
            return
        }
        #expect(decoded.parameters.bytes(SetupParameter.path) == Bytes("/anon"))
        #expect(decoded.parameters.varint(SetupParameter.solicit) == 1)
        #expect(decoded.versions.isEmpty)
    }

    @Test("SERVER_SETUP moq-dev sent us over moqt-16 (captured): four parameters, an unknown one kept")
    func serverSetupFromMoqDev() throws {
        let captured = wire(#"21 00 1e 04 02 c0 00 00 00 ff ff ff ff 05 0b "moq-lite-rs" 80 04 0b 53 01 02 01"#)
        guard case .serverSetup(let setup) = try decodeFramed(captured, .draft16) else {
            Issue.record("not a SERVER_SETUP")
            return
        }
        #expect(setup.selectedVersion == nil)
        #expect(setup.parameters.varint(SetupParameter.maxRequestID) == 0xFFFF_FFFF)
        #expect(setup.parameters.bytes(SetupParameter.implementation) == Bytes("moq-lite-rs"))
        #expect(setup.parameters.varint(SetupParameter.solicit) == 1)
        #expect(setup.parameters.varint(0x40B5C) == 1, "moq-dev's second extension, unknown to us, is kept")
        #expect(ControlMessage.serverSetup(setup).encoded(version: .draft16) == captured)
        // Draft-14's carries the selected version first.
        let d14 = wire(
            #"21 00 24 c0 00 00 00 ff 00 00 0e 03 02 c0 00 00 00 ff ff ff ff 07 0b "moq-lite-rs" 80 04 0b 5a 01"#)
        guard case .serverSetup(let s14) = try decodeFramed(d14, .draft14) else {
            Issue.record("not a SERVER_SETUP")
            return
        }
        #expect(s14.selectedVersion.flatMap(MoqtVersion.init(code:)) == .draft14)
    }

    @Test("SUBSCRIBE for room/cam catalog.json: fields inline on draft-14, parameters 0x10/0x20/0x21/0x22 on draft-16")
    func subscribe() throws {
        let message = ControlMessage.subscribe(
            Subscribe(requestID: 0, namespace: .roomCam, trackName: Bytes("catalog.json")))
        let d14 = wire(#"03 00 1d 00 02 04 "room" 03 "cam" 0c "catalog.json" 80 02 01 02 00"#)
        let d16 = wire(#"03 00 23 00 02 04 "room" 03 "cam" 0c "catalog.json" 04 10 01 10 40 80 01 01 02 01 02"#)
        #expect(message.encoded(version: .draft14) == d14)
        #expect(message.encoded(version: .draft16) == d16)
        #expect(try decodeFramed(d14, .draft14) == message)
        #expect(try decodeFramed(d16, .draft16) == message)
    }

    @Test("SUBSCRIBE_OK, PUBLISH_DONE, PUBLISH_NAMESPACE and its OK/DONE as moq-dev writes them")
    func replies() throws {
        let ok = ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 0))
        #expect(ok.encoded(version: .draft14) == wire("04 00 06 00 00 00 02 00 00"))
        // moq-dev's draft-16 SUBSCRIBE_OK has no track extensions: the group order defaults to ascending.
        guard case .subscribeOk(let d16) = try decodeFramed(wire("04 00 03 00 00 00"), .draft16) else {
            Issue.record("not a SUBSCRIBE_OK")
            return
        }
        #expect(d16.groupOrder == .ascending && d16.largest == nil && d16.trackExtensions.isEmpty)
        let done = wire(#"0b 00 07 00 40 c8 00 02 "OK""#)
        #expect(
            try decodeFramed(done, .draft16)
                == .publishDone(PublishDone(requestID: 0, statusCode: 200, streamCount: 0, reason: "OK")))
        let announce = ControlMessage.publishNamespace(PublishNamespace(requestID: 1, namespace: .roomCam))
        #expect(announce.encoded(version: .draft14) == wire("06 00 0c 01 02 04 72 6f 6f 6d 03 63 61 6d 00"))
        #expect(
            ControlMessage.requestOk(RequestOk(kind: .publishNamespace, requestID: 1)).encoded(version: .draft14)
                == wire("07 00 01 01"))
        #expect(
            ControlMessage.requestOk(RequestOk(kind: nil, requestID: 1)).encoded(version: .draft16)
                == wire("07 00 02 01 00"))
        #expect(
            ControlMessage.publishNamespaceDone(.namespace(.roomCam)).encoded(version: .draft14)
                == wire(#"09 00 0a 02 04 "room" 03 "cam""#))
        #expect(ControlMessage.publishNamespaceDone(.request(1)).encoded(version: .draft16) == wire("09 00 01 01"))
    }

    @Test("SUBSCRIBE_NAMESPACE for everything, as moq-dev sends it first on both drafts")
    func subscribeNamespaceEmptyPrefix() throws {
        let message = ControlMessage.subscribeNamespace(SubscribeNamespace(requestID: 0, prefix: TrackNamespace([])))
        #expect(message.encoded(version: .draft14) == wire("11 00 03 00 00 00"))
        #expect(message.encoded(version: .draft16) == wire("11 00 04 00 00 01 00"))
        #expect(try decodeFramed(wire("11 00 03 00 00 00"), .draft14) == message)
    }

    @Test(
        "a subgroup stream as moq-dev writes it: type 0x19, alias, group, priority; an object with a timestamp extension"
    )
    func subgroupFromMoqDev() throws {
        var decoder = SubgroupStreamDecoder(version: .draft14)
        let events = try decoder.feed(wire(#"19 00 05 00 00 05 10 80 12 d6 87 04 "abcd""#), fin: true)
        let header = SubgroupHeader(trackAlias: 0, group: 5, subgroup: .zero, publisherPriority: 0, hasExtensions: true)
        let object = SubgroupObject(
            id: 0, extensions: KeyValuePairs([.init(0x10, .varint(1_234_567))]), payload: Bytes("abcd"))
        #expect(events == [.header(header), .object(object)])
        var w = WireWriter()
        header.encode(into: &w, version: .draft14)
        object.encode(into: &w, after: nil, header: header, version: .draft14)
        #expect(w.bytes == wire(#"19 00 05 00 00 05 10 80 12 d6 87 04 "abcd""#))
    }
}

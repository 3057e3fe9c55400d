// SPDX-License-Identifier: MIT
import MoqBase
import MoqWire
import MoqtWire
import Testing

/// Every message this codec models, on both drafts, with values at the varint ceiling.
@Suite("MoQT wire: every message round-trips on draft-14 and draft-16")
struct RoundTripTests {
    static let ceiling = VarInt.max

    static func messages(_ version: MoqtVersion) -> [ControlMessage] {
        let d14 = version == .draft14
        var params = KeyValuePairs()
        params.set(MessageParameter.deliveryTimeout, .varint(Self.ceiling))
        params.set(0x3F, .bytes(Bytes([1, 2, 3])))
        let withLargest = SubscribeOk(
            requestID: ceiling, trackAlias: ceiling, expiresMs: d14 ? ceiling : 5,
            groupOrder: .descending, largest: Location(group: ceiling, object: ceiling), parameters: params,
            trackExtensions: d14 ? KeyValuePairs() : KeyValuePairs([.init(0x0E, .varint(7))]))
        return [
            .clientSetup(
                ClientSetup(
                    versions: d14 ? [version.code, 0xff00_0010] : [],
                    parameters: .setup(path: "/anon?jwt=x", maxRequestID: ceiling))),
            .serverSetup(
                ServerSetup(selectedVersion: d14 ? version.code : nil, parameters: .setup(maxRequestID: 100))),
            .subscribe(
                Subscribe(
                    requestID: ceiling, namespace: TrackNamespace([Bytes([0xff, 0x00]), Bytes("x")]),
                    trackName: Bytes("video"), subscriberPriority: 0, groupOrder: .ascending, forward: false,
                    filter: .absoluteRange(Location(group: 3, object: ceiling), endGroup: ceiling), parameters: params)),
            .subscribe(Subscribe(requestID: 2, namespace: .roomCam, trackName: Bytes(""), filter: .nextGroupStart)),
            .subscribe(
                Subscribe(
                    requestID: 4, namespace: .roomCam, trackName: Bytes("t"),
                    filter: .absoluteStart(Location(group: 0, object: 0)))),
            .subscribeOk(withLargest),
            .subscribeOk(SubscribeOk(requestID: 0, trackAlias: 9, groupOrder: d14 ? .descending : .ascending)),
            .requestError(
                RequestError(
                    kind: d14 ? .subscribe : nil, requestID: ceiling, code: ceiling, retryInterval: d14 ? 0 : ceiling,
                    reason: "not found: ünïcode")),
            .requestError(RequestError(kind: d14 ? .publishNamespace : nil, requestID: 1, code: 4)),
            .requestError(RequestError(kind: d14 ? .subscribeNamespace : nil, requestID: 3, code: 4)),
            .requestOk(RequestOk(kind: d14 ? .publishNamespace : nil, requestID: ceiling)),
            .requestOk(
                RequestOk(
                    kind: d14 ? .subscribeNamespace : nil, requestID: 5, parameters: d14 ? KeyValuePairs() : params)),
            .unsubscribe(requestID: ceiling),
            .publishDone(PublishDone(requestID: 1, statusCode: ceiling, streamCount: ceiling, reason: "")),
            .publishNamespace(PublishNamespace(requestID: ceiling, namespace: .roomCam, parameters: params)),
            .publishNamespaceDone(d14 ? .namespace(.roomCam) : .request(ceiling)),
            .publishNamespaceCancel(
                PublishNamespaceCancel(target: d14 ? .namespace(.roomCam) : .request(1), code: ceiling, reason: "gone")),
            .subscribeNamespace(
                SubscribeNamespace(
                    requestID: 6, prefix: TrackNamespace(path: "room"), options: d14 ? .namespace : .both)),
            .goaway(newSessionURI: "moqt://elsewhere.example/anon"),
            .goaway(newSessionURI: ""),
            .maxRequestID(ceiling),
            .requestsBlocked(maximum: ceiling),
            .unsupported(type: 0x0D, requestID: ceiling),
            // SUBSCRIBE_UPDATE / REQUEST_UPDATE: draft-14 has every field (its end is +1: the ceiling's
            // predecessor is the largest that round-trips); draft-16 only those given.
            .requestUpdate(
                RequestUpdate(
                    requestID: ceiling, existingRequestID: ceiling, subscriberPriority: 255, forward: false,
                    filter: .absoluteRange(Location(group: 1, object: ceiling), endGroup: ceiling - 1),
                    parameters: params)),
            .requestUpdate(
                d14
                    ? RequestUpdate(
                        requestID: 1, existingRequestID: 0, subscriberPriority: 0, forward: true,
                        filter: .absoluteStart(Location(group: 0, object: 0)))
                    : RequestUpdate(requestID: 1, existingRequestID: 0, subscriberPriority: 0)),
            .fetch(
                Fetch(
                    requestID: ceiling, subscriberPriority: 255, groupOrder: .descending,
                    kind: .standalone(
                        namespace: .roomCam, trackName: Bytes("video"), start: Location(group: 1, object: ceiling),
                        end: Location(group: ceiling, object: 0)), parameters: params)),
            .fetch(Fetch(requestID: 2, kind: .relativeJoining(subscription: ceiling, groupOffset: ceiling))),
            .fetch(Fetch(requestID: 4, subscriberPriority: 0, kind: .absoluteJoining(subscription: 0, startGroup: 7))),
            .fetchOk(
                FetchOk(
                    requestID: ceiling, groupOrder: d14 ? .descending : .ascending, endOfTrack: true,
                    end: Location(group: ceiling, object: ceiling), parameters: params,
                    trackExtensions: d14 ? KeyValuePairs() : KeyValuePairs([.init(0x0E, .varint(7))]))),
            .fetchCancel(requestID: ceiling),
            .requestError(RequestError(kind: d14 ? .fetch : nil, requestID: 9, code: 0x3, reason: "no")),
        ]
            + (d14
                ? [.unsubscribeNamespace(.namespace(.roomCam))]
                : [.namespace(suffix: .roomCam), .namespaceDone(suffix: TrackNamespace(path: "x"))])
    }

    @Test("every modelled message", arguments: MoqtVersion.allCases)
    func everyMessage(_ version: MoqtVersion) throws {
        for message in Self.messages(version) { try expectRoundTrip(message, version) }
    }

    @Test(
        "SUBSCRIBE_UPDATE (draft-14) and REQUEST_UPDATE (draft-16), byte for byte; a range that ends before it starts")
    func requestUpdate() throws {
        let update = RequestUpdate(requestID: 3, existingRequestID: 0, subscriberPriority: 10)
        // Draft-14: every field, a priority alone still writes the start (0, 0), open end, forward 1.
        #expect(
            ControlMessage.requestUpdate(update).encoded(version: .draft14) == wire("02 00 08 03 00 00 00 00 0A 01 00"))
        // Draft-16: the parameter alone (SUBSCRIBER_PRIORITY 0x20), what moq-ffi applies.
        #expect(ControlMessage.requestUpdate(update).encoded(version: .draft16) == wire("02 00 05 03 00 01 20 0A"))
        #expect(throws: DecodeError.self) {
            // Start group 5, end group 3 (+1 = 4).
            try ControlMessage.decode(type: 0x02, payload: Bytes(wire("03 00 05 00 04 0A 01 00")), version: .draft14)
        }
        #expect(throws: DecodeError.self) {
            // FORWARD 2.
            try ControlMessage.decode(type: 0x02, payload: Bytes(wire("03 00 01 10 02")), version: .draft16)
        }
    }

    @Test("messages that exist on one draft only are not encoded on the other")
    func draftOnly() {
        #expect(ControlMessage.namespace(suffix: .roomCam).encoded(version: .draft14) == nil)
        #expect(ControlMessage.unsubscribeNamespace(.request(0)).encoded(version: .draft16) == nil)
        #expect(
            ControlMessage.requestError(RequestError(kind: nil, requestID: 0, code: 0)).encoded(version: .draft14)
                == nil)
    }

    @Test("several messages in one read, and one message a byte at a time, come out whole and in order")
    func streamReader() throws {
        let messages = Self.messages(.draft16)
        let bytes = messages.compactMap { $0.encoded(version: .draft16) }.flatMap { $0 }
        var whole = ControlStreamReader()
        whole.append(bytes)
        var dripped = ControlStreamReader()
        var fromWhole: [ControlMessage] = []
        var fromDrip: [ControlMessage] = []
        while let (type, payload) = whole.next() {
            fromWhole.append(try ControlMessage.decode(type: type, payload: payload, version: .draft16))
        }
        for byte in bytes {
            dripped.append([byte])
            while let (type, payload) = dripped.next() {
                fromDrip.append(try ControlMessage.decode(type: type, payload: payload, version: .draft16))
            }
        }
        #expect(fromWhole == messages)
        #expect(fromDrip == messages)
        #expect(whole.buffered == 0 && dripped.buffered == 0)
    }

    @Test("a namespace maps to and from a broadcast path as moq-dev's does")
    func namespacePaths() {
        #expect(TrackNamespace(path: "/room//cam/").fields == [Bytes("room"), Bytes("cam")])
        #expect(TrackNamespace(path: "").fields.isEmpty)
        #expect(TrackNamespace.roomCam.path == "room/cam")
        #expect(TrackNamespace([Bytes([0xff])]).path == nil, "not UTF-8: no path")
        #expect(TrackNamespace([Bytes("a/b")]).path == nil, "a slash inside a field: no path")
        let prefix = TrackNamespace(path: "room")
        #expect(TrackNamespace.roomCam.hasPrefix(prefix))
        #expect(TrackNamespace.roomCam.suffix(after: prefix) == TrackNamespace(path: "cam"))
        #expect(TrackNamespace(path: "cam").prefixed(by: prefix) == .roomCam)
        #expect(prefix.suffix(after: .roomCam) == nil)
    }
}

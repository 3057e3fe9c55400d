// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire
import Testing

/// A raw peer against the MoQ Transport core: every rule it breaks closes the session with the
/// right code, and nothing it sends traps or grows without bound.
@Suite("MoQ Transport session core: hostile peers")
struct MoqtHostileTests {
    /// A client core and a raw server that has sent SERVER_SETUP (granting `grant` request ids).
    static func readyClient(_ version: MoqtVersion = .draft16, grant: UInt64 = 100) -> (MoqtPair, MemoryTransport) {
        let pair = MoqtPair(version, rawServer: true)
        let setup = ServerSetup(
            selectedVersion: version == .draft14 ? version.code : nil, parameters: .setup(maxRequestID: grant))
        pair.link.server.writeRaw(0, ControlMessage.serverSetup(setup).bytes(version))
        pair.run()
        return (pair, pair.link.server)
    }

    func closeCode(_ pair: MoqtPair) -> UInt64? {
        pair.link.server.log.compactMap { e -> UInt64? in
            if case .closed(let code, _) = e { code } else { nil }
        }.first
    }

    @Test("a second SETUP, a message before SETUP, a control stream that ends: PROTOCOL_VIOLATION")
    func setupRules() {
        let (pair, raw) = Self.readyClient()
        raw.writeRaw(0, ControlMessage.serverSetup(ServerSetup(parameters: .setup(maxRequestID: 1))).bytes(.draft16))
        pair.run()
        #expect(pair.client.closeReason == .local(.protocolViolation, "a second SETUP"))

        let early = MoqtPair(.draft16, rawServer: true)
        early.link.server.writeRaw(0, ControlMessage.maxRequestID(10).bytes(.draft16))
        early.run()
        #expect(early.client.closeReason == .local(.protocolViolation, "expected SETUP first"))

        let (ended, rawEnded) = Self.readyClient()
        rawEnded.writeRaw(0, [], fin: true)
        ended.run()
        #expect(ended.client.closeReason == .local(.protocolViolation, "the control stream ended"))
    }

    @Test("draft-14: a server that selects another version fails negotiation")
    func versionNegotiation() {
        let pair = MoqtPair(.draft14, rawServer: true)
        pair.link.server.writeRaw(
            0,
            ControlMessage.serverSetup(ServerSetup(selectedVersion: 0xff00_000d, parameters: .setup(maxRequestID: 1)))
                .bytes(.draft14))
        pair.run()
        if case .local(.versionNegotiationFailed, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
    }

    @Test(
        "request ids: wrong parity, out of order on draft-14, taken twice: INVALID_REQUEST_ID; at the varint ceiling: TOO_MANY_REQUESTS, no trap"
    )
    func requestIDs() {
        let cases: [(MoqtVersion, [UInt64], MoqtSessionError)] = [
            (.draft16, [0], .invalidRequestID), (.draft14, [3], .invalidRequestID),
            (.draft16, [3, 3], .invalidRequestID), (.draft16, [1, 1], .invalidRequestID),
            (.draft16, [VarInt.max], .tooManyRequests), (.draft14, [VarInt.max], .invalidRequestID),
        ]
        for (version, ids, expected) in cases {
            let (pair, raw) = Self.readyClient(version)
            for id in ids {
                raw.writeRaw(
                    0,
                    ControlMessage.publishNamespace(
                        PublishNamespace(requestID: id, namespace: TrackNamespace(path: "x"))
                    )
                    .bytes(version))
            }
            pair.run()
            if case .local(expected, _)? = pair.client.closeReason {
            } else {
                Issue.record("\(version) ids \(ids): \(String(describing: pair.client.closeReason))")
            }
        }
    }

    @Test(
        "draft-16: a request that overtakes a lower id (another stream came first) is taken, and the lower one after it"
    )
    func reorderedRequestIDs() {
        let (pair, raw) = Self.readyClient(.draft16)
        for id: UInt64 in [5, 1, 3] {
            raw.writeRaw(
                0,
                ControlMessage.publishNamespace(
                    PublishNamespace(requestID: id, namespace: TrackNamespace(path: "x\(id)"))
                )
                .bytes(.draft16))
            pair.run()
            #expect(pair.client.isReady, "id \(id): \(String(describing: pair.client.closeReason))")
        }
        #expect(pair.client.resourceUsage.requestIDsAhead == 0 && pair.client.resourceUsage.peerNamespaces == 3)
        raw.writeRaw(
            0,
            ControlMessage.publishNamespace(PublishNamespace(requestID: 9, namespace: TrackNamespace(path: "y")))
                .bytes(.draft16))
        pair.run()
        #expect(pair.client.resourceUsage.requestIDsAhead == 1)
    }

    @Test("draft-16: a SUBSCRIBE_NAMESPACE stream that overtakes the SERVER_SETUP waits for it, then is answered")
    func namespaceStreamBeforeSetup() {
        let pair = MoqtPair(.draft16, rawServer: true)
        pair.clientOrigin.publish(BroadcastProducer(path: "room/a", clock: pair.scheduler.clock))
        let raw = pair.link.server
        let request = ControlMessage.subscribeNamespace(
            SubscribeNamespace(requestID: 1, prefix: TrackNamespace(path: "room")))
        raw.writeRaw(1, request.bytes(.draft16))
        pair.run()
        #expect(pair.client.closeReason == nil && !pair.client.isReady)
        #expect(pair.controlMessages(receivedBy: raw, version: .draft16, stream: 1).isEmpty)
        raw.writeRaw(0, ControlMessage.serverSetup(ServerSetup(parameters: .setup(maxRequestID: 100))).bytes(.draft16))
        pair.run()
        #expect(pair.client.isReady, "\(String(describing: pair.client.closeReason))")
        let answers = pair.controlMessages(receivedBy: raw, version: .draft16, stream: 1)
        #expect(answers.contains { if case .requestOk = $0 { true } else { false } }, "\(answers)")
        #expect(answers.contains { if case .namespace = $0 { true } else { false } }, "\(answers)")

        // Past the bound before SETUP: PROTOCOL_VIOLATION.
        let flood = MoqtPair(.draft16, rawServer: true)
        flood.link.server.writeRaw(1, [UInt8](repeating: 0x11, count: 17 * 1024))
        flood.run()
        if case .local(.protocolViolation, _)? = flood.client.closeReason {
        } else {
            Issue.record("\(String(describing: flood.client.closeReason))")
        }
    }

    @Test("MAX_REQUEST_ID that does not increase: PROTOCOL_VIOLATION; at the ceiling: accepted")
    func maxRequestID() {
        let (pair, raw) = Self.readyClient(grant: 10)
        raw.writeRaw(0, ControlMessage.maxRequestID(VarInt.max).bytes(.draft16))
        pair.run()
        #expect(pair.client.isReady)
        raw.writeRaw(0, ControlMessage.maxRequestID(VarInt.max).bytes(.draft16))
        pair.run()
        if case .local(.protocolViolation, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
    }

    @Test("a SUBSCRIBE_OK for a request never made, an alias given twice: closed")
    func subscribeOkRules() {
        let (pair, raw) = Self.readyClient()
        raw.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 8, trackAlias: 1)).bytes(.draft16))
        pair.run()
        if case .local(.protocolViolation, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
        let (twice, rawTwice) = Self.readyClient()
        twice.client.subscribe(broadcast: "b", track: "t", into: twice.remoteTrack("t"))
        twice.client.subscribe(broadcast: "b", track: "u", into: twice.remoteTrack("u"))
        twice.run()
        rawTwice.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 7)).bytes(.draft16))
        rawTwice.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 2, trackAlias: 7)).bytes(.draft16))
        twice.run()
        if case .local(.duplicateTrackAlias, _)? = twice.client.closeReason {
        } else {
            Issue.record("\(String(describing: twice.client.closeReason))")
        }
    }

    /// A subgroup stream: header then one object per payload.
    static func groupStream(alias: UInt64, group: UInt64, _ payloads: [String], version: MoqtVersion = .draft16)
        -> [UInt8]
    {
        let header = SubgroupHeader(trackAlias: alias, group: group)
        var w = WireWriter()
        header.encode(into: &w, version: version)
        for (i, p) in payloads.enumerated() {
            SubgroupObject(id: UInt64(i), payload: Bytes(p))
                .encode(into: &w, after: i == 0 ? nil : UInt64(i - 1), header: header, version: version)
        }
        return w.bytes
    }

    @Test("a group stream that comes before its SUBSCRIBE_OK is held and read once the alias is known")
    func streamBeforeSubscribeOk() {
        let (pair, raw) = Self.readyClient()
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: "t", into: remote)
        pair.run()
        raw.writeRaw(3, Self.groupStream(alias: 5, group: 4, ["x", "y"]), fin: true)
        pair.run()
        #expect(remote.latestSequence == nil)
        raw.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 5)).bytes(.draft16))
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["x", "y"]])
        #expect(pair.client.isReady)
    }

    @Test("group streams no subscription claims: stopped after the wait, and at once past the bound")
    func unclaimedStreams() {
        var config = MoqtSessionConfig(version: .draft16, path: "/anon")
        config.maxUnknownAliasStreams = 2
        let pair = MoqtPair(.draft16, client: config, rawServer: true)
        pair.link.server.writeRaw(
            0, ControlMessage.serverSetup(ServerSetup(parameters: .setup(maxRequestID: 1))).bytes(.draft16))
        pair.run()
        let raw = pair.link.server
        for (i, stream) in [3, 7, 11].enumerated() {
            raw.writeRaw(Int64(stream), Self.groupStream(alias: 9, group: UInt64(i), ["z"]))
        }
        pair.run()
        #expect(raw.stopsSent.isEmpty)  // what the raw side sent, not received
        #expect(pair.client.counters.unknownAliasStreamsStopped == 1)
        pair.scheduler.advance(by: .seconds(2))
        #expect(pair.client.counters.unknownAliasStreamsStopped == 3)
        #expect(pair.link.client.stopsSent.keys.sorted() == [3, 7, 11])
        #expect(pair.client.isReady)
    }

    @Test("a malformed group stream closes the session with PROTOCOL_VIOLATION")
    func malformedGroupStream() {
        let (pair, raw) = Self.readyClient()
        raw.writeRaw(3, [0x10, 0x01], fin: true)  // a header cut short
        pair.run()
        if case .local(.protocolViolation, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
    }

    @Test("draft-14: a second bidirectional stream from the peer is a protocol violation")
    func secondBidiOnDraft14() {
        let (pair, raw) = Self.readyClient(.draft14)
        raw.writeRaw(1, [0x11])
        pair.run()
        if case .local(.protocolViolation, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
    }

    @Test("draft-14: a namespace the peer published before our SUBSCRIBE_NAMESPACE is reported to it")
    func namespacePublishedBeforeTheRequest() {
        let (pair, raw) = Self.readyClient(.draft14)
        raw.writeRaw(
            0,
            ControlMessage.publishNamespace(PublishNamespace(requestID: 1, namespace: TrackNamespace(path: "room/a")))
                .bytes(.draft14))
        pair.run()
        var events: [MoqtNamespaceEvent] = []
        pair.client.subscribeNamespace(prefix: "room") { events.append($0) }
        pair.run()
        #expect(events == [.announced("room/a")])
        raw.writeRaw(0, ControlMessage.publishNamespaceDone(.namespace(TrackNamespace(path: "room/a"))).bytes(.draft14))
        pair.run()
        #expect(events == [.announced("room/a"), .unannounced("room/a")])
        #expect(pair.client.isReady)
    }

    @Test("a peer past the window of request ids we granted is closed with TOO_MANY_REQUESTS")
    func pastTheWindow() {
        var config = MoqtSessionConfig(version: .draft16, path: "/anon")
        config.maxPeerRequests = 1
        let pair = MoqtPair(.draft16, client: config, rawServer: true)
        pair.link.server.writeRaw(
            0, ControlMessage.serverSetup(ServerSetup(parameters: .setup(maxRequestID: 10))).bytes(.draft16))
        pair.run()
        let raw = pair.link.server
        // One open request fits (id 1); the next (id 3) is past the grant of 1 + 2 × 1.
        for id: UInt64 in [1, 3] {
            raw.writeRaw(
                0,
                ControlMessage.publishNamespace(
                    PublishNamespace(requestID: id, namespace: TrackNamespace(path: "n\(id)"))
                )
                .bytes(.draft16))
        }
        pair.run()
        if case .local(.tooManyRequests, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
    }

    @Test("answers to a subscription we ended are ignored; a second SUBSCRIBE_OK for a live one is a violation")
    func answersAfterTheEnd() {
        let (pair, raw) = Self.readyClient()
        let handle = pair.client.subscribe(broadcast: "b", track: "t", into: pair.remoteTrack("t"))
        pair.run()
        handle.cancel()
        raw.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 1)).bytes(.draft16))
        raw.writeRaw(
            0, ControlMessage.publishDone(PublishDone(requestID: 0, statusCode: 3, streamCount: 0)).bytes(.draft16))
        raw.writeRaw(0, ControlFraming.frame(type: 0x17, payload: [0x01])!)  // FETCH_CANCEL crossing a refusal
        pair.run()
        #expect(pair.client.isReady, "\(String(describing: pair.client.closeReason))")
        pair.client.subscribe(broadcast: "b", track: "u", into: pair.remoteTrack("u"))
        pair.run()
        for _ in 0..<2 {
            raw.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 2, trackAlias: 9)).bytes(.draft16))
        }
        pair.run()
        if case .local(.protocolViolation, _)? = pair.client.closeReason {
        } else {
            Issue.record("\(String(describing: pair.client.closeReason))")
        }
    }

    @Test(
        "PUBLISH_DONE before its streams: a count of 0 (moq-dev's) or unknown waits a quiet second, a true count until they came"
    )
    func publishDoneBeforeItsStreams() {
        for count in [0, VarInt.max, 2] {
            let (pair, raw) = Self.readyClient()
            let remote = pair.remoteTrack("t")
            pair.client.subscribe(broadcast: "b", track: "t", into: remote)
            pair.run()
            raw.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 1)).bytes(.draft16))
            raw.writeRaw(
                0,
                ControlMessage.publishDone(PublishDone(requestID: 0, statusCode: 2, streamCount: count)).bytes(.draft16)
            )
            pair.run()
            #expect(remote.end == nil, "count \(count)")
            pair.scheduler.advance(by: .milliseconds(600))
            raw.writeRaw(3, Self.groupStream(alias: 1, group: 0, ["a"]), fin: true)
            pair.scheduler.advance(by: .milliseconds(600))
            raw.writeRaw(7, Self.groupStream(alias: 1, group: 1, ["b"]), fin: true)
            pair.run()
            #expect(pair.contents(remote).map(\.1) == [["a"], ["b"]], "count \(count)")
            if count == 2 {
                if case .finished? = remote.end {} else { Issue.record("count 2: \(String(describing: remote.end))") }
            } else {
                #expect(remote.end == nil, "count \(count): the quiet second restarted with each stream")
                pair.scheduler.advance(by: .seconds(1))
                if case .finished? = remote.end {
                } else {
                    Issue.record("count \(count): \(String(describing: remote.end))")
                }
            }
            #expect(pair.client.isReady)
        }
    }

    @Test("PUBLISH_DONE after END_OF_TRACK: the subscription is forgotten at once (it held its alias until the close)")
    func publishDoneAfterEndOfTrack() {
        let (pair, raw) = Self.readyClient()
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: "t", into: remote)
        pair.run()
        raw.writeRaw(0, ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 1)).bytes(.draft16))
        let header = SubgroupHeader(trackAlias: 1, group: 0)
        var w = WireWriter()
        header.encode(into: &w, version: .draft16)
        SubgroupObject(id: 0, payload: Bytes("a")).encode(into: &w, after: nil, header: header, version: .draft16)
        SubgroupObject(id: 1, payload: Bytes(), status: .endOfTrack)
            .encode(into: &w, after: 0, header: header, version: .draft16)
        raw.writeRaw(3, w.bytes, fin: true)
        pair.run()
        #expect(remote.end != nil)
        raw.writeRaw(
            0, ControlMessage.publishDone(PublishDone(requestID: 0, statusCode: 2, streamCount: 0)).bytes(.draft16))
        pair.run()
        #expect(pair.client.resourceUsage.ownSubscriptions == 0 && pair.client.resourceUsage.aliases == 0)
        #expect(pair.client.isReady)
    }

    @Test("a subscription that starts at an object past 0 numbers its objects from there")
    func absoluteStartObjectIDs() throws {
        let pair = MoqtPair(.draft16, rawServer: false)
        let track = pair.serverBroadcast("b").createTrack("t")
        let group = track.appendGroup()
        for p in ["a", "b", "c", "d"] { group.write(Bytes(p), timestamp: 0) }
        group.finish()
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(
            broadcast: "b", track: "t", into: remote, filter: .absoluteStart(Location(group: 0, object: 2)))
        pair.run()
        let stream = try #require(pair.link.client.peerStreams.first { StreamID.isUnidirectional($0) })
        var decoder = SubgroupStreamDecoder(version: .draft16)
        let ids = try decoder.feed(pair.link.client.bytes(on: stream), fin: true).compactMap { e -> UInt64? in
            if case .object(let o) = e { o.id } else { nil }
        }
        #expect(ids == [2, 3])
        #expect(pair.contents(remote).map(\.1) == [["c", "d"]])
    }
}

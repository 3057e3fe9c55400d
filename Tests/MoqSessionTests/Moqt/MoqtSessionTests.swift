// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire
import Testing

/// The MoQ Transport core against itself on drafts 14 and 16: SETUP, subscriptions served from the
/// model and written back into it, namespaces both ways, request-id windows, refusals.
@Suite("MoQ Transport session core")
struct MoqtSessionTests {
    static let versions: [MoqtVersion] = [.draft14, .draft16]

    @Test(
        "SETUP: versions on draft-14, none on 16; the client's PATH reaches the server; both ready", arguments: versions
    )
    func setup(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        #expect(pair.client.isReady && pair.server.isReady)
        #expect(pair.clientDelegate.ready && pair.serverDelegate.ready)
        #expect(pair.server.peerPath == "/anon")
        #expect(pair.server.peerImplementation == "swiftmoq")
        guard case .clientSetup(let setup)? = pair.controlMessages(receivedBy: pair.link.server, version: version).first
        else { throw MoqtTestError.missing("CLIENT_SETUP") }
        #expect(setup.versions == (version == .draft14 ? [0xff00_000e] : []))
        // A bounded window of request ids, not moq-dev's 2^32.
        // The server's ids are odd, from 1: 256 of them.
        #expect(setup.parameters.varint(SetupParameter.maxRequestID) == 1 + 2 * 256)
        guard
            case .serverSetup(let answer)? = pair.controlMessages(receivedBy: pair.link.client, version: version).first
        else { throw MoqtTestError.missing("SERVER_SETUP") }
        #expect(answer.selectedVersion == (version == .draft14 ? 0xff00_000e : nil))
        #expect(answer.parameters.varint(SetupParameter.maxRequestID) == 2 * 256)
    }

    @Test(
        "a subscription: the latest group whole (moq-dev's LargestObject), then live groups, then PUBLISH_DONE finishes it",
        arguments: versions)
    func subscribeLive(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("room/cam").createTrack("video")
        track.writeSingleFrameGroup(Bytes("old"), timestamp: 0)
        let current = track.appendGroup()
        current.write(Bytes("k"), timestamp: 1)
        current.write(Bytes("d"), timestamp: 2)
        let remote = pair.remoteTrack("video")
        pair.client.subscribe(broadcast: "room/cam", track: "video", into: remote)
        pair.run()
        #expect(pair.contents(remote).map(\.0) == [1])
        #expect(pair.contents(remote).first?.1 == ["k", "d"])
        current.write(Bytes("d2"), timestamp: 3)
        current.finish()
        let next = track.appendGroup()
        next.write(Bytes("k2"), timestamp: 4)
        next.finish()
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["k", "d", "d2"], ["k2"]])
        #expect(remote.end == nil)
        track.finish()
        pair.run()
        #expect(remote.end != nil)
        if case .aborted? = remote.end { Issue.record("aborted: \(String(describing: remote.end))") }
        #expect(pair.server.counters.subscriptionsServed == 1 && pair.server.counters.groupsSent == 2)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("group streams: one per group, subgroup 0, objects 0, 1, 2… with FIN", arguments: versions)
    func groupStreamLayout(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        pair.client.subscribe(broadcast: "b", track: "t", into: pair.remoteTrack("t"))
        pair.run()
        let group = track.appendGroup()
        for payload in ["a", "bb", "ccc"] { group.write(Bytes(payload), timestamp: 0) }
        group.finish()
        pair.run()
        let streams = pair.link.client.peerStreams.filter { StreamID.isUnidirectional($0) }
        #expect(streams.count == 1)
        let stream = try #require(streams.first)
        var decoder = SubgroupStreamDecoder(version: version)
        let events = try decoder.feed(pair.link.client.bytes(on: stream), fin: true)
        guard case .header(let header)? = events.first else { throw MoqtTestError.missing("a subgroup header") }
        #expect(header.group == 0 && header.subgroup == .zero)
        let objects = events.compactMap { e -> SubgroupObject? in if case .object(let o) = e { o } else { nil } }
        #expect(objects.map(\.id) == [0, 1, 2])
        #expect(objects.map { String(decoding: $0.payload.array, as: UTF8.self) } == ["a", "bb", "ccc"])
        #expect(pair.link.client.log.contains(.data(stream: stream, bytes: [], fin: true)))
    }

    @Test(
        "a track or broadcast that does not exist is refused; the subscriber's track ends NOT_FOUND",
        arguments: versions)
    func refused(version: MoqtVersion) {
        let pair = MoqtPair(version)
        _ = pair.serverBroadcast("b").createTrack("t")
        let noTrack = pair.remoteTrack("x")
        let noBroadcast = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: "x", into: noTrack)
        pair.client.subscribe(broadcast: "nope", track: "t", into: noBroadcast)
        pair.run()
        #expect(noTrack.end == .aborted(.notFound))
        #expect(noBroadcast.end == .aborted(.notFound))
        #expect(pair.server.counters.subscriptionsRefused == 2)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("UNSUBSCRIBE: the publisher stops, answers PUBLISH_DONE, and the request's id goes back", arguments: versions)
    func unsubscribe(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: "t", into: remote)
        pair.run()
        track.writeSingleFrameGroup(Bytes("1"), timestamp: 0)
        pair.run()
        #expect(track.observerCount == 1)
        handle.cancel()
        pair.run()
        #expect(track.observerCount == 0)
        track.writeSingleFrameGroup(Bytes("2"), timestamp: 0)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["1"]])
        let done = pair.controlMessages(receivedBy: pair.link.client, version: version).contains {
            if case .publishDone(let d) = $0 { d.statusCode == MoqtCode.subscriptionEnded } else { false }
        }
        #expect(done)
    }

    @Test("GOAWAY: the server's, with a new URI, reaches the client; a client's carries none", arguments: versions)
    func goaway(version: MoqtVersion) {
        let pair = MoqtPair(version)
        pair.server.sendGoaway(uri: "moqt://elsewhere.example/anon")
        pair.client.sendGoaway(uri: "moqt://not-allowed")
        pair.run()
        #expect(pair.clientDelegate.goaways == ["moqt://elsewhere.example/anon"])
        #expect(pair.serverDelegate.goaways.isEmpty)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("detach: UNSUBSCRIBE and the track stays open; what the session's close does to a track is the caller's")
    func detachAndSessionClose() {
        let pair = MoqtPair(.draft16)
        let track = pair.serverBroadcast("b").createTrack("t")
        let detached = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: "t", into: detached)
        let open = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: "t", into: open, sessionClosedCode: nil)
        let relayed = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: "t", into: relayed, sessionClosedCode: .internal)
        pair.run()
        track.writeSingleFrameGroup(Bytes("1"), timestamp: 0)
        pair.run()
        #expect(track.observerCount == 3)
        handle.detach()
        pair.run()
        #expect(track.observerCount == 2 && detached.end == nil)
        pair.client.close()
        #expect(open.end == nil && detached.end == nil)
        #expect(relayed.end == .aborted(.internal))
    }

    @Test("the peer's PUBLISH_NAMESPACEs are heard by an observer (a relay taking in a publisher)", arguments: versions)
    func observePeerNamespaces(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let early = BroadcastProducer(path: "room/a", clock: pair.scheduler.clock)
        pair.clientOrigin.publish(early)
        pair.run()
        var events: [MoqtNamespaceEvent] = []
        pair.server.observePeerNamespaces { events.append($0) }
        let late = BroadcastProducer(path: "room/b", clock: pair.scheduler.clock)
        pair.clientOrigin.publish(late)
        pair.run()
        pair.clientOrigin.unpublish(early)
        pair.run()
        #expect(events == [.announced("room/a"), .announced("room/b"), .unannounced("room/a")])
    }

    @Test(
        "a PUBLISH_NAMESPACE the server does not accept (outside a publisher's grant) is answered UNAUTHORIZED; the rest are taken",
        arguments: versions)
    func publishNamespaceRefused(version: MoqtVersion) {
        let pair = MoqtPair(version)
        pair.server.acceptsPeerNamespace = { BroadcastPath.hasPrefix($0, "mine") }
        var events: [MoqtNamespaceEvent] = []
        pair.server.observePeerNamespaces { events.append($0) }
        pair.clientOrigin.publish(BroadcastProducer(path: "mine/cam", clock: pair.scheduler.clock))
        pair.clientOrigin.publish(BroadcastProducer(path: "other/cam", clock: pair.scheduler.clock))
        pair.run()
        #expect(events == [.announced("mine/cam")])
        let refusals = pair.controlMessages(receivedBy: pair.link.client, version: version).compactMap {
            if case .requestError(let e) = $0 { e.code } else { nil }
        }
        #expect(refusals == [MoqtCode.unauthorized])
        #expect(pair.client.isReady && pair.server.isReady, "\(String(describing: pair.server.closeReason))")
        #expect(pair.server.resourceUsage.openPeerRequests <= 1)  // the refused request's id went back to the window
    }

    @Test(
        "a group that reaches the served track after a newer one (a relay's upstream streams race) is still sent",
        arguments: versions)
    func lateGroupServed(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        track.writeSingleFrameGroup(Bytes("0"), timestamp: 0)
        let remote = pair.subscribeT().track
        pair.run()
        for sequence: UInt64 in [2, 1] {
            let group = track.createGroup(sequence: sequence)
            group?.write(Bytes("\(sequence)"), timestamp: 0)
            group?.finish()
            pair.run()
        }
        #expect(pair.contents(remote).map(\.0) == [0, 1, 2])
        #expect(pair.server.counters.groupsSent == 3)
    }

    @Test(
        "FORWARD 0: SUBSCRIBE_OK and no objects (nothing pulled upstream), PUBLISH_DONE at the end", arguments: versions
    )
    func forwardZero(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        track.writeSingleFrameGroup(Bytes("0"), timestamp: 0)
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: "t", into: remote, forward: false)
        pair.run()
        track.writeSingleFrameGroup(Bytes("1"), timestamp: 0)
        pair.run()
        let accepted = pair.controlMessages(receivedBy: pair.link.client, version: version).contains {
            if case .subscribeOk(let ok) = $0 {
                ok.requestID == handle.requestID && ok.largest?.group == 0
            } else {
                false
            }
        }
        #expect(accepted)
        #expect(pair.server.counters.groupsSent == 0 && pair.contents(remote).isEmpty)
        track.finish()
        pair.run()
        // PUBLISH_DONE counts 0 streams, which a subscriber cannot tell from moq-dev's count: a quiet second.
        pair.scheduler.advance(by: .seconds(1))
        if case .finished? = remote.end {} else { Issue.record("not finished: \(String(describing: remote.end))") }
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("namespaces: what the origin publishes under the prefix is announced, then withdrawn", arguments: versions)
    func namespaces(version: MoqtVersion) {
        let pair = MoqtPair(version)
        _ = pair.serverBroadcast("room/a")
        _ = pair.serverBroadcast("other/x")
        var events: [MoqtNamespaceEvent] = []
        pair.client.subscribeNamespace(prefix: "room") { events.append($0) }
        pair.run()
        let b = pair.serverBroadcast("room/b")
        pair.run()
        pair.serverOrigin.unpublish(b)
        pair.run()
        #expect(events == [.announced("room/a"), .announced("room/b"), .unannounced("room/b")])
        #expect(pair.client.isReady && pair.server.isReady, "\(String(describing: pair.client.closeReason))")
    }

    @Test(
        "a server that does not list namespaces (listsNamespaces false) accepts SUBSCRIBE_NAMESPACE, announces nothing, and still serves a subscription by name",
        arguments: versions)
    func unlisted(version: MoqtVersion) throws {
        var config = MoqtSessionConfig(version: version)
        config.listsNamespaces = false
        let pair = MoqtPair(version, server: config)
        let track = pair.serverBroadcast("room/a").createTrack("t")
        var events: [MoqtNamespaceEvent] = []
        pair.client.subscribeNamespace(prefix: "room") { events.append($0) }
        pair.run()
        let b = pair.serverBroadcast("room/b")
        pair.run()
        pair.serverOrigin.unpublish(b)
        pair.run()
        #expect(events.isEmpty, "\(events)")
        track.writeSingleFrameGroup(Bytes("x"), timestamp: 0)
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "room/a", track: "t", into: remote)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["x"]])
        #expect(pair.client.isReady && pair.server.isReady, "\(String(describing: pair.client.closeReason))")
    }

    @Test("over WebTransport the CONNECT's path is the session's: a PATH setup parameter cannot change it")
    func connectPathWins() {
        var server = MoqtSessionConfig(version: .draft16)
        server.connectPath = "/anon/room"
        let pair = MoqtPair(.draft16, client: MoqtSessionConfig(version: .draft16, path: "/secret"), server: server)
        #expect(pair.server.isReady && pair.server.peerPath == "/anon/room")
    }

    @Test(
        "a server's per-session limits tighter than MoQ Transport's defaults bound its IETF sessions; looser ones leave the defaults"
    )
    func limitsTighten() {
        let defaults = MoqtSessionConfig(version: .draft16)
        var limits = SessionLimits()
        limits.maxServedSubscriptions = 1
        limits.maxServedFetches = 0
        limits.maxServedAnnounces = 1
        limits.maxAnnouncements = 5
        limits.maxPendingStreams = 3
        limits.maxUnsentBytes = 1000
        let tight = defaults.tightened(to: limits)
        #expect(tight.maxPeerRequests == 2 && tight.maxAnnounced == 5)
        #expect(tight.maxUnknownAliasStreams == 3 && tight.maxUnsentBytes == 1000)
        let loose = defaults.tightened(to: SessionLimits())
        #expect(loose.maxPeerRequests == defaults.maxPeerRequests && loose.maxAnnounced == defaults.maxAnnounced)
        #expect(loose.maxUnknownAliasStreams == defaults.maxUnknownAliasStreams)
        #expect(loose.maxUnsentBytes == defaults.maxUnsentBytes)
    }

    @Test(
        "our client keeps to the window the server granted: a third subscription waits until one ends",
        arguments: versions)
    func requestWindow(version: MoqtVersion) throws {
        let pair = MoqtPair.serving(version, window: 2)
        // Our client honours the grant: the third subscription waits until one ends.
        let first = pair.subscribeT().handle
        pair.subscribeT()
        pair.subscribeT()
        pair.run()
        #expect(pair.server.counters.subscriptionsServed == 2)
        first.cancel()
        pair.run()
        #expect(pair.server.counters.subscriptionsServed == 3)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test(
        "a subscription cancelled while it waits for an id takes none (ids stay in sequence); one that waits when the session closes ends",
        arguments: versions)
    func queuedCancelled(version: MoqtVersion) throws {
        let pair = MoqtPair.serving(version, window: 1)
        let first = pair.subscribeT().handle
        let (queued, dropped) = pair.subscribeT()
        let last = pair.subscribeT().handle
        pair.run()
        #expect(queued.requestID == nil && pair.client.resourceUsage.queuedRequests == 2)
        queued.cancel()
        if case .finished? = dropped.end {} else { Issue.record("not finished: \(String(describing: dropped.end))") }
        first.cancel()
        pair.run()
        // The third subscription got the id after the first's: the cancelled one took none.
        let subscribes = pair.controlMessages(receivedBy: pair.link.server, version: version).compactMap {
            if case .subscribe(let s) = $0 { s.requestID } else { nil }
        }
        #expect(subscribes == [first.requestID, first.requestID.map { $0 + 2 }].compactMap { $0 })
        #expect(last.requestID == subscribes.last && pair.server.counters.subscriptionsServed == 2)
        #expect(pair.client.isReady && pair.server.isReady, "\(String(describing: pair.server.closeReason))")

        // One more waits behind the window; the session closes under it: its track ends.
        let orphan = pair.subscribeT().track
        pair.run()
        #expect(orphan.end == nil)
        pair.client.close()
        #expect(orphan.end == .aborted(.sessionClosed))
    }

    @Test("a namespace subscription cancelled (draft-16: its stream closed): the peer stops serving it")
    func namespaceCancelled() {
        let pair = MoqtPair(.draft16)
        _ = pair.serverBroadcast("room/a")
        var events: [MoqtNamespaceEvent] = []
        let handle = pair.client.subscribeNamespace(prefix: "room") { events.append($0) }
        pair.run()
        #expect(pair.server.resourceUsage.servedNamespaces == 1)
        let open = pair.server.resourceUsage.openPeerRequests
        handle.cancel()
        pair.run()
        #expect(pair.server.resourceUsage.servedNamespaces == 0)
        #expect(pair.server.resourceUsage.openPeerRequests == open - 1)
        _ = pair.serverBroadcast("room/b")
        pair.run()
        #expect(events == [.announced("room/a")])
        #expect(pair.client.isReady && pair.server.isReady, "\(String(describing: pair.client.closeReason))")
    }

    @Test(
        "draft-16: the peer ending our namespace subscription's stream ends it: its broadcasts withdrawn, then `ended` (a reader stops waiting)"
    )
    func namespaceEndedByPeer() {
        let pair = MoqtPair(.draft16)
        _ = pair.serverBroadcast("room/a")
        var events: [MoqtNamespaceEvent] = []
        pair.client.subscribeNamespace(prefix: "room") { events.append($0) }
        pair.run()
        #expect(events == [.announced("room/a")])
        // The client's bidi stream after the control stream.
        let stream = pair.link.server.peerStreams.first { $0 != 0 && $0 % 4 == 0 }
        #expect(stream != nil)
        if let stream { pair.link.server.resetStream(stream, code: MoqtCode.cancelled) }
        pair.run()
        #expect(events == [.announced("room/a"), .unannounced("room/a"), .ended])
        #expect(pair.client.isReady, "\(String(describing: pair.client.closeReason))")
    }

    @Test(
        "TRACK_STATUS is refused NOT_SUPPORTED, a joining FETCH of no subscription INVALID_JOINING_REQUEST_ID, a REQUEST_UPDATE of no subscription DOES_NOT_EXIST; the session goes on"
    )
    func unsupported() throws {
        let pair = MoqtPair(.draft16, rawServer: true)
        let raw = pair.link.server
        raw.writeRaw(0, ControlMessage.serverSetup(ServerSetup(parameters: .setup(maxRequestID: 100))).bytes(.draft16))
        pair.run()
        #expect(pair.client.isReady)
        raw.writeRaw(
            0,
            ControlMessage.fetch(MoqtWire.Fetch(requestID: 1, kind: .relativeJoining(subscription: 0, groupOffset: 1)))
                .bytes(.draft16))
        raw.writeRaw(0, ControlFraming.frame(type: 0x0D, payload: [0x03])!)
        // REQUEST_UPDATE (0x02) of request 1, with request id 5: draft-16 requires an answer.
        raw.writeRaw(0, ControlFraming.frame(type: 0x02, payload: [0x05, 0x01, 0x00])!)
        pair.run()
        let replies = pair.controlMessages(receivedBy: pair.link.server, version: .draft16).compactMap {
            if case .requestError(let e) = $0 { e } else { nil }
        }
        #expect(replies.map(\.requestID) == [1, 3, 5])
        #expect(replies.map(\.code) == [0x32, MoqtCode.notSupported, MoqtCode.doesNotExist(.draft16)])
        #expect(pair.client.isReady && pair.client.counters.unsupportedRequests == 1)
        #expect(pair.client.counters.updatesRefused == 1)
    }
}

enum MoqtTestError: Error { case missing(String) }

// SPDX-License-Identifier: MIT
import MoqBase
import MoqModel
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire
import Testing

/// SUBSCRIBE_UPDATE (draft-14) / REQUEST_UPDATE (draft-16) between two cores: what the subscriber
/// sends (only a change, after SUBSCRIBE_OK, with a request id of its own) and what the publisher does
/// with it (priority, forwarding, a narrower range), and how it answers.
@Suite("MoQT session: subscription updates")
struct MoqtUpdateTests {
    static let versions = MoqtVersion.allCases

    /// The updates one side received.
    static func updates(_ pair: MoqtPair, receivedBy side: MemoryTransport, _ version: MoqtVersion) -> [RequestUpdate] {
        pair.controlMessages(receivedBy: side, version: version).compactMap {
            if case .requestUpdate(let u) = $0 { u } else { nil }
        }
    }

    @Test(
        "a new priority re-orders the open streams; draft-16 answers REQUEST_OK, draft-14 nothing; the same priority sends nothing",
        arguments: versions)
    func priority(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        let group = track.appendGroup()
        group.write(Bytes("a"), timestamp: 0)
        let (handle, remote) = pair.subscribeT()
        pair.run()
        let stream = try #require(pair.link.server.sendOrders.keys.first { StreamID.isUnidirectional($0) })
        let before = try #require(pair.link.server.sendOrders[stream])
        handle.update(priority: 128)  // unchanged (SUBSCRIBE's default): nothing goes
        handle.update(priority: 3)
        pair.run()
        let updates = Self.updates(pair, receivedBy: pair.link.server, version)
        #expect(updates.count == 1)
        let update = try #require(updates.first)
        #expect(update.existingRequestID == handle.requestID && update.requestID == (handle.requestID ?? 0) + 2)
        #expect(update.subscriberPriority == 3)
        if version == .draft14 {
            // Every field: the start SUBSCRIBE_OK implied (after the largest object, 0/0), forward 1.
            #expect(update.forward == true && update.filter == .absoluteStart(Location(group: 0, object: 1)))
        } else {
            #expect(update.forward == nil && update.filter == nil)
        }
        #expect(try #require(pair.link.server.sendOrders[stream]) > before)
        #expect(pair.server.counters.updatesApplied == 1 && pair.client.counters.updatesSent == 1)
        let answers = pair.controlMessages(receivedBy: pair.link.client, version: version).filter {
            if case .requestOk(let ok) = $0 { ok.requestID == update.requestID } else { false }
        }
        #expect(answers.count == (version == .draft16 ? 1 : 0))
        #expect(pair.client.counters.updatesAccepted == answers.count)
        // The subscription goes on.
        group.write(Bytes("b"), timestamp: 0)
        group.finish()
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["a", "b"]])
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test("an update asked before SUBSCRIBE_OK goes once it came; the latest of each field wins", arguments: versions)
    func beforeTheAnswer(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        track.writeSingleFrameGroup(Bytes("x"), timestamp: 0)
        let (handle, _) = pair.subscribeT()
        handle.update(priority: 9)  // no SUBSCRIBE_OK yet: held
        handle.update(priority: 7)
        pair.run()
        let updates = Self.updates(pair, receivedBy: pair.link.server, version)
        #expect(updates.map(\.subscriberPriority) == [7])
        if version == .draft14 {
            // SUBSCRIBE_OK's largest was group 0 object 0: the start is after it.
            #expect(updates.first?.filter == .absoluteStart(Location(group: 0, object: 1)))
        }
    }

    @Test("an update asked while the SUBSCRIBE waits for a request id changes that SUBSCRIBE", arguments: versions)
    func beforeTheRequestID(version: MoqtVersion) throws {
        let pair = MoqtPair.serving(version, window: 1)
        let (first, _) = pair.subscribeT()
        let (second, _) = pair.subscribeT()  // no id left: it waits
        second.update(priority: 5, forward: true)
        pair.run()
        #expect(second.requestID == nil)
        first.cancel()  // its id goes back, and the second SUBSCRIBE takes the next
        pair.run()
        let subscribes = pair.controlMessages(receivedBy: pair.link.server, version: version).compactMap {
            if case .subscribe(let s) = $0 { s } else { nil }
        }
        #expect(subscribes.map(\.subscriberPriority) == [128, 5])
        #expect(Self.updates(pair, receivedBy: pair.link.server, version).isEmpty)
    }

    @Test(
        "an update that cannot wait for a request id (the queue is full) is dropped and counted, not stuck",
        arguments: versions)
    func dropped(version: MoqtVersion) throws {
        let pair = MoqtPair(
            version, client: MoqtSessionConfig(version: version, path: "/anon", maxQueuedRequests: 0),
            server: MoqtSessionConfig(version: version, maxPeerRequests: 1))
        _ = pair.serverBroadcast("b").createTrack("t")
        let (handle, _) = pair.subscribeT()
        pair.run()
        handle.update(priority: 5)
        handle.update(priority: 6)  // tried again, not held back by the first
        pair.run()
        #expect(pair.client.counters.updatesDropped == 2 && pair.client.counters.updatesSent == 0)
        #expect(pair.client.isReady)
    }

    @Test("FORWARD 0 then 1: nothing while paused, then from the latest group on", arguments: versions)
    func forward(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: "t", into: remote, forward: false)
        pair.run()
        track.writeSingleFrameGroup(Bytes("g0"), timestamp: 0)
        track.writeSingleFrameGroup(Bytes("g1"), timestamp: 0)
        pair.run()
        #expect(pair.contents(remote).isEmpty)
        handle.update(forward: true)
        pair.run()
        track.writeSingleFrameGroup(Bytes("g2"), timestamp: 0)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["g1"], ["g2"]])
        handle.update(forward: false)
        pair.run()
        track.writeSingleFrameGroup(Bytes("g3"), timestamp: 0)
        pair.run()
        #expect(pair.contents(remote).map(\.0) == [1, 2])
        #expect(pair.server.counters.updatesApplied == 2)
    }

    @Test(
        "a narrower end ends the subscription (PUBLISH_DONE SUBSCRIPTION_ENDED) once its last group went; a later start skips groups; a wider end is ignored",
        arguments: versions)
    func narrowing(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        let (handle, remote) = pair.subscribeT()
        pair.run()
        let id = try #require(handle.requestID)
        // The raw updates take the client core's next ids (it asks nothing more).
        func update(_ requestID: UInt64, _ filter: SubscriptionFilter) {
            let message = ControlMessage.requestUpdate(
                RequestUpdate(
                    requestID: requestID, existingRequestID: id, subscriberPriority: 128, forward: true, filter: filter)
            )
            pair.link.client.writeRaw(0, message.bytes(version))
            pair.run()
        }
        track.writeSingleFrameGroup(Bytes("g0"), timestamp: 0)
        pair.run()
        // Start at group 2 (group 1 is skipped), end at group 3.
        update(id + 2, .absoluteRange(Location(group: 2, object: 0), endGroup: 3))
        update(id + 4, .absoluteRange(Location(group: 0, object: 0), endGroup: 50))  // wider: ignored
        for g in 1...5 { track.writeSingleFrameGroup(Bytes("g\(g)"), timestamp: 0) }
        pair.run()
        pair.scheduler.advance(by: .seconds(2))  // PUBLISH_DONE's quiet second
        #expect(pair.contents(remote).map(\.0) == [0, 2, 3])
        let done = pair.controlMessages(receivedBy: pair.link.client, version: version).compactMap {
            if case .publishDone(let d) = $0 { d } else { nil }
        }
        #expect(done.map(\.statusCode) == [MoqtCode.subscriptionEnded])  // the end of the filter
        #expect(remote.end != nil)
        #expect(pair.client.isReady && pair.server.isReady)
    }

    @Test(
        "an update of a subscription not served: draft-16 REQUEST_ERROR (DOES_NOT_EXIST), draft-14 counted",
        arguments: versions)
    func unknown(version: MoqtVersion) {
        let pair = MoqtPair(version)
        let update = ControlMessage.requestUpdate(
            RequestUpdate(
                requestID: 0, existingRequestID: VarInt.max, subscriberPriority: 1, forward: true,
                filter: .absoluteStart(Location(group: 0, object: 0))))
        pair.link.client.writeRaw(0, update.bytes(version))
        pair.run()
        let errors = pair.controlMessages(receivedBy: pair.link.client, version: version).compactMap {
            if case .requestError(let e) = $0 { e } else { nil }
        }
        #expect(errors.map(\.code) == (version == .draft16 ? [MoqtCode.doesNotExist(version)] : []))
        #expect(pair.server.counters.updatesRefused == 1)
        #expect(pair.server.isReady)
    }
}

// SPDX-License-Identifier: MIT
import MoqBase
import MoqModel
import MoqWire
import MoqtSession
import MoqtWire
import Testing

/// A LargestObject subscription that a publisher starts inside a group (moq-dev's relay starts after the
/// object it holds): our client parks that group's stream, asks a Relative Joining FETCH for the objects
/// before it, and writes the group whole. The peer here is raw bytes playing moq-dev's part.
@Suite("MoQ Transport core: the joining FETCH of a subscription that starts inside a group")
struct MoqtJoiningFetchTests {
    static let versions = MoqtVersion.allCases

    /// A client subscribed to `b/t` (request 0) whose SUBSCRIBE_OK (alias 1) says the largest object is
    /// `{4, 1}`, and a group stream (uni stream 3) for group 4 that starts at object 2.
    static func joined(
        _ version: MoqtVersion, stream objects: [(UInt64, String)] = [(2, "c"), (3, "d")], fin: Bool = false
    )
        -> (MoqtPair, MemoryTransport, TrackProducer, MoqtSubscriptionHandle)
    {
        let (pair, raw) = MoqtHostileTests.readyClient(version)
        let remote = pair.remoteTrack("t")
        let handle = pair.client.subscribe(broadcast: "b", track: "t", into: remote)
        pair.run()
        raw.writeRaw(
            0,
            ControlMessage.subscribeOk(SubscribeOk(requestID: 0, trackAlias: 1, largest: Location(group: 4, object: 1)))
                .bytes(version))
        raw.writeRaw(3, groupStream(group: 4, objects, version: version), fin: fin)
        pair.run()
        return (pair, raw, remote, handle)
    }

    static func groupStream(group: UInt64, _ objects: [(UInt64, String)], version: MoqtVersion) -> [UInt8] {
        let header = SubgroupHeader(trackAlias: 1, group: group)
        var w = WireWriter()
        header.encode(into: &w, version: version)
        var previous: UInt64?
        for (id, payload) in objects {
            SubgroupObject(id: id, payload: Bytes(payload)).encode(
                into: &w, after: previous, header: header, version: version)
            previous = id
        }
        return w.bytes
    }

    static func fetchStream(requestID: UInt64, _ objects: [FetchObject], version: MoqtVersion) -> [UInt8] {
        var w = WireWriter()
        FetchHeader.encode(requestID: requestID, into: &w)
        for object in objects { object.encode(into: &w, version: version) }
        return w.bytes
    }

    /// The FETCHes the client sent.
    static func fetches(_ pair: MoqtPair, _ version: MoqtVersion) -> [MoqtWire.Fetch] {
        pair.controlMessages(receivedBy: pair.link.server, version: version).compactMap {
            if case .fetch(let f) = $0 { f } else { nil }
        }
    }

    /// What the publisher answers a FETCH with: FETCH_OK on draft-14, REQUEST_OK on draft-16 (moq-dev's).
    static func accepted(_ id: UInt64, _ version: MoqtVersion) -> [UInt8] {
        version == .draft14
            ? ControlMessage.fetchOk(FetchOk(requestID: id, end: Location(group: 4, object: 1))).bytes(version)
            : ControlMessage.requestOk(RequestOk(kind: nil, requestID: id)).bytes(version)
    }

    @Test(
        "the group joined after its first objects is parked, fetched and written whole; later groups flow",
        arguments: versions)
    func fetchedWhole(version: MoqtVersion) throws {
        let (pair, raw, remote, _) = Self.joined(version)
        #expect(remote.latestSequence == nil, "the joined group waits for its first objects")
        let fetch = try #require(Self.fetches(pair, version).first)
        #expect(fetch.kind == .relativeJoining(subscription: 0, groupOffset: 0) && fetch.requestID == 2)
        raw.writeRaw(0, Self.accepted(2, version))
        raw.writeRaw(
            7,
            Self.fetchStream(
                requestID: 2,
                [FetchObject(group: 4, id: 0, payload: Bytes("a")), FetchObject(group: 4, id: 1, payload: Bytes("b"))],
                version: version), fin: true)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["a", "b", "c", "d"]])
        raw.writeRaw(3, [], fin: true)
        raw.writeRaw(11, Self.groupStream(group: 5, [(0, "e")], version: version), fin: true)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["a", "b", "c", "d"], ["e"]])
        #expect(pair.client.counters.joiningFetches == 1 && pair.client.counters.fetchedObjects == 2)
        #expect(pair.client.isReady, "\(String(describing: pair.client.closeReason))")
    }

    @Test(
        "a one-object group joined after its object (an empty stream) is written from the fetch: a catalog",
        arguments: versions)
    func emptyStream(version: MoqtVersion) throws {
        let (pair, raw, remote, _) = Self.joined(version, stream: [], fin: true)
        #expect(Self.fetches(pair, version).count == 1)
        raw.writeRaw(
            7,
            Self.fetchStream(requestID: 2, [FetchObject(group: 4, id: 0, payload: Bytes("catalog"))], version: version),
            fin: true)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["catalog"]])
        #expect(pair.client.isReady)
    }

    @Test(
        "a refused FETCH (relays without FETCH), or a fetch with a hole, leaves the group as it came",
        arguments: versions)
    func refusedOrHoled(version: MoqtVersion) throws {
        let (pair, raw, remote, _) = Self.joined(version)
        raw.writeRaw(
            0,
            ControlMessage.requestError(
                RequestError(kind: version == .draft14 ? .fetch : nil, requestID: 2, code: MoqtCode.notSupported)
            ).bytes(version))
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["c", "d"]])

        let (holed, rawHoled, remoteHoled, _) = Self.joined(version)
        rawHoled.writeRaw(
            7, Self.fetchStream(requestID: 2, [FetchObject(group: 4, id: 1, payload: Bytes("b"))], version: version),
            fin: true)
        holed.run()
        #expect(holed.contents(remoteHoled).map(\.1) == [["c", "d"]])
        #expect(pair.client.isReady && holed.client.isReady)
    }

    @Test(
        "a FETCH never answered is given up after joiningFetchWait with FETCH_CANCEL; its late stream is stopped",
        arguments: versions)
    func givenUp(version: MoqtVersion) throws {
        let (pair, raw, remote, _) = Self.joined(version)
        pair.scheduler.advance(by: .seconds(2))
        #expect(pair.contents(remote).map(\.1) == [["c", "d"]])
        let cancels = pair.controlMessages(receivedBy: pair.link.server, version: version).filter {
            $0 == .fetchCancel(requestID: 2)
        }
        #expect(cancels.count == 1)
        raw.writeRaw(
            7, Self.fetchStream(requestID: 2, [FetchObject(group: 4, id: 0, payload: Bytes("a"))], version: version))
        pair.run()
        #expect(raw.log.contains { if case .stopSending(stream: 7, code: _) = $0 { true } else { false } })
        #expect(pair.contents(remote).map(\.1) == [["c", "d"]])
        #expect(pair.client.isReady)
    }

    @Test(
        "hostile fetches: a stream for a request never asked is stopped; one past the byte bound is given up; the group goes on",
        arguments: versions)
    func hostile(version: MoqtVersion) throws {
        let (pair, raw, remote, _) = Self.joined(version)
        raw.writeRaw(7, Self.fetchStream(requestID: 40, [], version: version), fin: true)
        pair.run()
        #expect(raw.log.contains { if case .stopSending(stream: 7, code: _) = $0 { true } else { false } })
        let big = Bytes([UInt8](repeating: 0x61, count: 700_000))
        raw.writeRaw(
            11,
            Self.fetchStream(
                requestID: 2, [FetchObject(group: 4, id: 0, payload: big), FetchObject(group: 4, id: 1, payload: big)],
                version: version))
        pair.run()
        #expect(pair.contents(remote).map { $0.1.map(\.count) } == [[1, 1]], "the group as it came")
        #expect(
            pair.controlMessages(receivedBy: pair.link.server, version: version).contains(.fetchCancel(requestID: 2)))
        #expect(pair.client.isReady, "\(String(describing: pair.client.closeReason))")
    }

    @Test(
        "a parked group: detached (another source feeds the track) it is not written; ended by PUBLISH_DONE's quiet second it is written first; reset, its FETCH is cancelled",
        arguments: versions)
    func parkedGroupEnds(version: MoqtVersion) throws {
        let (detached, rawDetached, remoteDetached, handle) = Self.joined(version)
        handle.detach()
        detached.run()
        #expect(detached.contents(remoteDetached).isEmpty && remoteDetached.end == nil)
        #expect(rawDetached.log.contains { if case .stopSending(stream: 3, code: _) = $0 { true } else { false } })

        let (done, rawDone, remoteDone, _) = Self.joined(version)
        rawDone.writeRaw(
            0, ControlMessage.publishDone(PublishDone(requestID: 0, statusCode: 2, streamCount: 0)).bytes(version))
        done.run()
        done.scheduler.advance(by: .seconds(1))
        #expect(done.contents(remoteDone).map(\.1) == [["c", "d"]])
        #expect(remoteDone.end != nil)

        let (reset, rawReset, _, _) = Self.joined(version)
        rawReset.resetStream(3, code: 0)
        reset.run()
        let cancels = reset.controlMessages(receivedBy: reset.link.server, version: version).filter {
            $0 == .fetchCancel(requestID: 2)
        }
        #expect(cancels.count == 1 && reset.client.isReady)
    }

    @Test(
        "a parked group flooded with empty objects is bounded by what they cost held, not their payload",
        arguments: versions)
    func emptyObjectFlood(version: MoqtVersion) throws {
        let (pair, raw, remote, _) = Self.joined(version)
        let header = SubgroupHeader(trackAlias: 1, group: 4)
        var w = WireWriter()
        for i in 0..<20_000 {
            SubgroupObject(id: UInt64(4 + i), payload: Bytes()).encode(
                into: &w, after: UInt64(3 + i), header: header, version: version)
        }
        raw.writeRaw(3, w.bytes)
        pair.run()
        #expect(pair.contents(remote).map { $0.1.count } == [20_002], "given up: the group goes on as it came")
        #expect(
            pair.controlMessages(receivedBy: pair.link.server, version: version).contains(.fetchCancel(requestID: 2)))
        #expect(pair.client.isReady)
    }

    @Test("a group that comes whole (SwiftMoQ's servers start at the group) asks no FETCH", arguments: versions)
    func wholeGroupNoFetch(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        let track = pair.serverBroadcast("b").createTrack("t")
        let group = track.appendGroup()
        for p in ["a", "b"] { group.write(Bytes(p), timestamp: 0) }
        let remote = pair.remoteTrack("t")
        pair.client.subscribe(broadcast: "b", track: "t", into: remote)
        pair.run()
        #expect(pair.contents(remote).map(\.1) == [["a", "b"]])
        #expect(pair.client.counters.joiningFetches == 0)
    }
}

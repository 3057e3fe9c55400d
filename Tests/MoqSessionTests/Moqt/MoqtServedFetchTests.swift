// SPDX-License-Identifier: MIT
import MoqBase
import MoqModel
import MoqWire
import MoqtSession
import MoqtWire
import Testing

/// FETCH served from the cache: a standalone FETCH from our client's API to our server, and joining
/// FETCHes (relative and absolute) from a raw client, with what each refuses.
@Suite("MoQ Transport core: FETCH served from the cache")
struct MoqtServedFetchTests {
    static let versions = MoqtVersion.allCases

    /// Groups 0…3 of track `t` of broadcast `b`, three frames each (`"<g><a|b|c>"`), group 3 open.
    static func fill(_ pair: MoqtPair) -> TrackProducer {
        let track = pair.serverBroadcast("b").createTrack("t")
        for g in 0..<4 {
            let group = track.appendGroup()
            for f in ["a", "b", "c"] { group.write(Bytes("\(g)\(f)"), timestamp: 0) }
            if g < 3 { group.finish() }
        }
        return track
    }

    static func fetch(
        _ pair: MoqtPair, track: String = "t", group: UInt64, objects: Range<UInt64>? = nil
    ) -> Result<[String], StreamErrorCode>? {
        var result: Result<[Bytes], StreamErrorCode>?
        pair.client.fetch(broadcast: "b", track: track, group: group, objects: objects) { result = $0 }
        pair.run()
        return result?.map { $0.map { String(decoding: $0.array, as: UTF8.self) } }
    }

    @Test(
        "a standalone FETCH brings a group, or a range of its objects; an unknown track or a group not published is NOT_FOUND",
        arguments: versions)
    func standalone(version: MoqtVersion) throws {
        let pair = MoqtPair(version)
        _ = Self.fill(pair)
        #expect(try Self.fetch(pair, group: 1)?.get() == ["1a", "1b", "1c"])
        #expect(try Self.fetch(pair, group: 2, objects: 1..<3)?.get() == ["2b", "2c"])
        #expect(try Self.fetch(pair, group: 3)?.get() == ["3a", "3b", "3c"], "an open group: what it holds")
        #expect(Self.fetch(pair, track: "nope", group: 0).map { (try? $0.get()) == nil } == true)
        if case .failure(let code)? = Self.fetch(pair, group: 9) {
            #expect(code == .notFound)
        } else {
            Issue.record("a group not published was fetched")
        }
        #expect(pair.server.counters.fetchesServed == 3 && pair.server.counters.fetchesRefused == 2)
        #expect(pair.client.isReady && pair.server.isReady, "\(String(describing: pair.client.closeReason))")
    }

    /// A raw client that completed SETUP and subscribed to `b/t` with LargestObject (request 0).
    static func rawSubscriber(_ version: MoqtVersion) -> (MoqtPair, MemoryTransport) {
        let pair = MoqtPair(version, rawClient: true)
        _ = fill(pair)
        let raw = pair.link.client
        let setup = ClientSetup(
            versions: version == .draft14 ? [version.code] : [], parameters: .setup(maxRequestID: 100))
        raw.writeRaw(0, ControlMessage.clientSetup(setup).bytes(version))
        raw.writeRaw(
            0,
            ControlMessage.subscribe(
                MoqtWire.Subscribe(requestID: 0, namespace: TrackNamespace(path: "b"), trackName: Bytes("t"))
            ).bytes(version))
        pair.run()
        return (pair, raw)
    }

    /// The objects of the server's first fetch stream (after the subscription's group stream).
    static func fetched(_ pair: MoqtPair, _ version: MoqtVersion) throws -> [String] {
        let stream = try #require(
            pair.link.client.peerStreams.first { s in pair.link.client.bytes(on: s).first == 0x05 })
        var decoder = FetchStreamDecoder(version: version)
        return try decoder.feed(pair.link.client.bytes(on: stream), fin: true).compactMap {
            if case .object(let o) = $0 { String(decoding: o.payload.array, as: UTF8.self) } else { nil }
        }
    }

    @Test(
        "a joining FETCH brings the whole groups before the subscription's first (which starts at its group)",
        arguments: versions)
    func joining(version: MoqtVersion) throws {
        for kind in [
            FetchKind.relativeJoining(subscription: 0, groupOffset: 2),
            .absoluteJoining(subscription: 0, startGroup: 1),
        ] {
            let (pair, raw) = Self.rawSubscriber(version)
            raw.writeRaw(0, ControlMessage.fetch(MoqtWire.Fetch(requestID: 2, kind: kind)).bytes(version))
            pair.run()
            #expect(try Self.fetched(pair, version) == ["1a", "1b", "1c", "2a", "2b", "2c"], "\(kind)")
            let ok = pair.controlMessages(receivedBy: raw, version: version).compactMap {
                if case .fetchOk(let ok) = $0 { ok } else { nil }
            }
            #expect(ok.map(\.end) == [Location(group: 2, object: 0)], "the whole of group 2 (\"+1\": object 0)")
            #expect(pair.server.isReady)
        }
    }

    @Test(
        "joining refusals: an unknown subscription is INVALID_JOINING_REQUEST_ID; a subscription without LargestObject closes the session",
        arguments: versions)
    func joiningRefused(version: MoqtVersion) throws {
        let (pair, raw) = Self.rawSubscriber(version)
        raw.writeRaw(
            0,
            ControlMessage.fetch(MoqtWire.Fetch(requestID: 2, kind: .relativeJoining(subscription: 40, groupOffset: 1)))
                .bytes(version))
        pair.run()
        let errors = pair.controlMessages(receivedBy: raw, version: version).compactMap {
            if case .requestError(let e) = $0 { e.code } else { nil }
        }
        #expect(errors == [version == .draft14 ? 0x7 : 0x32])
        raw.writeRaw(
            0,
            ControlMessage.subscribe(
                MoqtWire.Subscribe(
                    requestID: 4, namespace: TrackNamespace(path: "b"), trackName: Bytes("t"), filter: .nextGroupStart)
            ).bytes(version))
        raw.writeRaw(
            0,
            ControlMessage.fetch(MoqtWire.Fetch(requestID: 6, kind: .relativeJoining(subscription: 4, groupOffset: 1)))
                .bytes(version))
        pair.run()
        if case .local(.protocolViolation, _)? = pair.server.closeReason {
        } else {
            Issue.record("\(String(describing: pair.server.closeReason))")
        }
    }

    @Test(
        "a FETCH past the byte bound stops at the bound (the objects before it come, the first always)",
        arguments: versions)
    func bounded(version: MoqtVersion) throws {
        var config = MoqtSessionConfig(version: version)
        config.maxUnsentBytes = 40
        let pair = MoqtPair(version, server: config)
        _ = Self.fill(pair)
        // Two objects of 2 bytes (and 16 of overhead) each fit in 40; the third would not.
        #expect(try Self.fetch(pair, group: 1)?.get() == ["1a", "1b"])
        // The first object always comes, whatever its size.
        config.maxUnsentBytes = 1
        let tiny = MoqtPair(version, server: config)
        _ = Self.fill(tiny)
        #expect(try Self.fetch(tiny, group: 2)?.get() == ["2a"])
        #expect(pair.client.isReady && pair.server.isReady)
    }
}

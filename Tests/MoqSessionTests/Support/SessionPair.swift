// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire

/// Records what a session core reports.
final class RecordingDelegate: SessionCoreDelegate {
    var setups: [Setup] = []
    var goaways: [String] = []
    var closes: [SessionCloseReason] = []

    func sessionDidSetup(_ session: SessionCore, peer: Setup) { setups.append(peer) }
    func session(_ session: SessionCore, didReceiveGoaway uri: String) { goaways.append(uri) }
    func session(_ session: SessionCore, didCloseWith reason: SessionCloseReason) { closes.append(reason) }
}

/// Two session cores joined by a ``MemoryLink`` on virtual time.
final class SessionPair {
    let scheduler = VirtualScheduler()
    let link: MemoryLink
    let client: SessionCore
    let server: SessionCore
    let clientDelegate = RecordingDelegate()
    let serverDelegate = RecordingDelegate()
    let clientOrigin = Origin()
    let serverOrigin = Origin()

    init(
        clientConfig: SessionConfig = SessionConfig(path: "/anon/room?jwt=abc"),
        serverConfig: SessionConfig = SessionConfig(), maxStreams: Int = 100, datagrams: Bool = true,
        connect: Bool = true, rawServer: Bool = false
    ) {
        link = MemoryLink(scheduler: scheduler, maxStreams: maxStreams, datagrams: datagrams)
        client = SessionCore(
            config: clientConfig, transport: link.client, scheduler: scheduler, publishOrigin: clientOrigin)
        server = SessionCore(
            config: serverConfig, transport: link.server, scheduler: scheduler, publishOrigin: serverOrigin)
        client.delegate = clientDelegate
        server.delegate = serverDelegate
        link.client.core = client
        link.server.core = rawServer ? nil : server
        if connect {
            client.connected()
            server.connected()
            run()
        }
    }

    func run() { scheduler.run() }

    /// A client core whose peer is the raw server side of the link (bytes written by the test),
    /// with the peer's SETUP sent and read.
    static func withRawServer(
        clientConfig: SessionConfig = SessionConfig(path: "/anon/room?jwt=abc")
    ) -> (SessionPair, MemoryTransport) {
        let pair = SessionPair(clientConfig: clientConfig, connect: false, rawServer: true)
        pair.client.connected()
        pair.run()
        let raw = pair.link.server
        raw.writeRaw(3, [0x01] + Setup().encoded(), fin: true)
        pair.run()
        return (pair, raw)
    }

    /// A broadcast on the server's origin with clock = virtual.
    func serverBroadcast(_ path: String) -> BroadcastProducer {
        let b = BroadcastProducer(path: path, clock: scheduler.clock)
        serverOrigin.publish(b)
        return b
    }

    /// A second pair whose server serves `upstream` (a track another pair receives) as broadcast
    /// "b", as a relay serves what it receives; with `range`, its client subscribes to it (not run).
    static func relaying(_ upstream: TrackProducer, range: SubscriptionRange? = nil) -> (
        relay: SessionPair, downstream: TrackProducer
    ) {
        let relay = SessionPair()
        relay.serverBroadcast("b").onTrackRequest { $0 == upstream.name ? upstream : nil }
        let downstream = relay.remoteTrack(upstream.name)
        if let range { relay.client.subscribe(broadcast: "b", track: downstream, range: range) }
        return (relay, downstream)
    }

    /// A local track the client's subscription writes into.
    func remoteTrack(_ name: String) -> TrackProducer {
        TrackProducer(name: name, info: nil, clock: scheduler.clock)
    }

    /// A track `name` of the server's broadcast `broadcast`, and the client's subscription to it
    /// with `range` (not run yet): (what the test writes, what the client receives).
    func subscribedTrack(
        _ name: String, broadcast: String = "b", range: SubscriptionRange = SubscriptionRange()
    ) -> (track: TrackProducer, remote: TrackProducer) {
        let track = serverBroadcast(broadcast).createTrack(name)
        let remote = remoteTrack(name)
        client.subscribe(broadcast: broadcast, track: remote, range: range)
        return (track, remote)
    }

    /// The client's subscription to track `name` of the server's broadcast `b` with `range`, after a
    /// run: the local track it writes into.
    func subscribe(_ name: String, range: SubscriptionRange = SubscriptionRange()) -> TrackProducer {
        let remote = remoteTrack(name)
        client.subscribe(broadcast: "b", track: remote, range: range)
        run()
        return remote
    }

    /// What the publisher answered on the client's first subscribe stream (START, DROP, END), in order;
    /// nil before there is one.
    func subscribeResponses() -> [SubscribeResponse]? {
        let stream = link.client.log.lazy.compactMap { e -> Int64? in
            if case .data(let s, _, _) = e, !StreamID.isUnidirectional(s), s != 0 { return s }
            return nil
        }.first
        guard let stream else { return nil }
        var r = WireReader(Bytes(link.client.bytes(on: stream)))
        var responses: [SubscribeResponse] = []
        while let message = try? SubscribeResponse.decode(from: &r) { responses.append(message) }
        return responses
    }

    /// Everything cached in `track`, as (group, frame payload strings).
    func contents(_ track: TrackProducer) -> [(UInt64, [String])] {
        track.groups(from: 0).map { g in
            (g.sequence, track.frames(of: g, from: 0).frames.map { String(decoding: $0.payload.array, as: UTF8.self) })
        }
    }
}

extension Bytes {
    init(_ string: String) { self.init(utf8: string) }
}

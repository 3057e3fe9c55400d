// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire

final class MoqtRecordingDelegate: MoqtSessionDelegate {
    var ready = false
    var goaways: [String] = []
    var closed: MoqtCloseReason?
    func moqtSessionReady(_ session: MoqtSessionCore) { ready = true }
    func moqtSession(_ session: MoqtSessionCore, goaway uri: String) { goaways.append(uri) }
    func moqtSession(_ session: MoqtSessionCore, closed reason: MoqtCloseReason) { closed = reason }
}

/// Two MoQ Transport cores over an in-memory link on virtual time (or one core and a raw peer).
final class MoqtPair {
    let scheduler = VirtualScheduler()
    let link: MemoryLink
    let client: MoqtSessionCore
    let server: MoqtSessionCore
    let clientDelegate = MoqtRecordingDelegate()
    let serverDelegate = MoqtRecordingDelegate()
    let clientOrigin = Origin()
    let serverOrigin = Origin()

    init(
        _ version: MoqtVersion, client clientConfig: MoqtSessionConfig? = nil,
        server serverConfig: MoqtSessionConfig? = nil,
        rawServer: Bool = false, rawClient: Bool = false, connect: Bool = true, datagrams: Bool = true
    ) {
        link = MemoryLink(scheduler: scheduler, datagrams: datagrams)
        client = MoqtSessionCore(
            config: clientConfig ?? MoqtSessionConfig(version: version, path: "/anon"), transport: link.client,
            scheduler: scheduler, publishOrigin: clientOrigin)
        server = MoqtSessionCore(
            config: serverConfig ?? MoqtSessionConfig(version: version), transport: link.server, scheduler: scheduler,
            publishOrigin: serverOrigin)
        client.delegate = clientDelegate
        server.delegate = serverDelegate
        link.client.core = rawClient ? nil : client
        link.server.core = rawServer ? nil : server
        if connect {
            if !rawClient { client.connected() }
            if !rawServer { server.connected() }
            run()
        }
    }

    func run() { scheduler.run() }

    /// A broadcast on the server's origin, on virtual time.
    func serverBroadcast(_ path: String) -> BroadcastProducer {
        let b = BroadcastProducer(path: path, clock: scheduler.clock)
        serverOrigin.publish(b)
        return b
    }

    /// A track the client's subscription writes into.
    func remoteTrack(_ name: String) -> TrackProducer { TrackProducer(name: name, info: nil, clock: scheduler.clock) }

    /// A pair whose server grants the client `requests` request ids and serves track `t` of broadcast `b`.
    static func serving(_ version: MoqtVersion, window requests: UInt64) -> MoqtPair {
        let pair = MoqtPair(version, server: MoqtSessionConfig(version: version, maxPeerRequests: requests))
        _ = pair.serverBroadcast("b").createTrack("t")
        return pair
    }

    /// The client subscribes to track `t` of broadcast `b`: its handle, and the track it writes into.
    @discardableResult
    func subscribeT() -> (handle: MoqtSubscriptionHandle, track: TrackProducer) {
        let track = remoteTrack("t")
        return (client.subscribe(broadcast: "b", track: "t", into: track), track)
    }

    /// Frames received per group: (sequence, payloads as strings).
    func contents(_ track: TrackProducer) -> [(UInt64, [String])] {
        track.snapshot(from: 0).groups.map { g in
            (g.sequence, track.frames(of: g, from: 0).frames.map { String(decoding: $0.payload.array, as: UTF8.self) })
        }
    }

    /// The control messages one side received (decoded from what the link carried on the control stream).
    func controlMessages(receivedBy side: MemoryTransport, version: MoqtVersion, stream: Int64 = 0) -> [ControlMessage]
    {
        var reader = ControlStreamReader()
        reader.append(side.bytes(on: stream))
        var out: [ControlMessage] = []
        while let (type, payload) = reader.next() {
            if let m = try? ControlMessage.decode(type: type, payload: payload, version: version) { out.append(m) }
        }
        return out
    }
}

extension ControlMessage {
    /// The framed bytes (tests only send messages that exist on `version`).
    func bytes(_ version: MoqtVersion) -> [UInt8] { encoded(version: version) ?? [] }
}

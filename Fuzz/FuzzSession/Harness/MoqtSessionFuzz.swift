// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import MoqtSession
import MoqtWire

/// The stateful fuzzer of the MoQ Transport core: the input is a script a hostile peer plays
/// against one ``MoqtSessionCore`` (either role, draft-14 or 16) over the same in-memory transport
/// and virtual clock as ``SessionFuzz`` — SETUP right, wrong, twice or never; control messages
/// with request ids in order, out of order or at the ceiling; group streams for aliases known or
/// not, split, cut short, reset; namespace streams; datagrams; updates of subscriptions both ways;
/// the core's own requests answered with anything; publishing on the served track (datagram groups too); time jumps; a stalled link.
///
/// After every step: every received byte returned as flow-control credit (the core copies what
/// it keeps), and every count a peer feeds within its bound; at the end, a close (if any) with a
/// MoQ Transport code, and nothing left alive in a reference cycle.
public enum MoqtSessionFuzz {
    /// Plays `input`; returns the invariants it broke (empty when none).
    public static func run(_ input: [UInt8]) -> [String] {
        weak var core: MoqtSessionCore?
        weak var track: TrackProducer?
        var violations: [String]
        do {
            let script = MoqtScript(input)
            script.play()
            (core, track) = (script.core, script.media)
            violations = script.violations
        }
        if core != nil { violations.append("the session core outlived the script (a reference cycle)") }
        if track != nil { violations.append("the served track outlived the script (a reference cycle)") }
        return violations
    }

    /// Small bounds, so that each is reachable from a few kilobytes of input.
    static func config(_ version: MoqtVersion, isClient: Bool) -> MoqtSessionConfig {
        MoqtSessionConfig(
            version: version, path: isClient ? "/anon" : nil, maxPeerRequests: 4, maxQueuedRequests: 4,
            maxUnknownAliasStreams: 3, unknownAliasWait: .milliseconds(500), maxQueuedGroups: 4,
            maxUnsentBytes: 16 * 1024, maxAnnounced: 8)
    }
}

final class MoqtScript {
    var input: FuzzInput
    let scheduler = FuzzScheduler()
    let transport: FuzzTransport
    let core: MoqtSessionCore
    let version: MoqtVersion
    let isClient: Bool
    let origin = Origin()
    let broadcast: BroadcastProducer
    let media: TrackProducer
    var received: [TrackProducer] = []
    var handles: [MoqtSubscriptionHandle] = []
    var peerOpen: [Int64] = []
    var peerDone = Set<Int64>()
    var peerNext: [Bool: Int64]
    /// The peer's next request id when it plays by the rules.
    var peerRequestID: UInt64
    /// Our request ids the peer has seen (for answers that match).
    var controlStream: Int64?
    var violations: [String] = []
    let config: MoqtSessionConfig

    init(_ bytes: [UInt8]) {
        input = FuzzInput(bytes)
        isClient = input.bool()
        version = input.bool() ? .draft16 : .draft14
        transport = FuzzTransport(
            isClient: isClient, scheduler: scheduler, maxStreams: 4 + input.int(8), datagrams: true)
        config = MoqtSessionFuzz.config(version, isClient: isClient)
        broadcast = BroadcastProducer(path: "room/b", clock: scheduler.clock)
        media = broadcast.createTrack(
            "t", info: TrackInfo(priority: 1, maxAgeMs: 5000), limits: SessionFuzz.cacheLimits)
        origin.publish(broadcast)
        core = MoqtSessionCore(config: config, transport: transport, scheduler: scheduler, publishOrigin: origin)
        transport.core = core
        peerNext = [true: isClient ? 1 : 0, false: isClient ? 3 : 2]
        peerRequestID = isClient ? 1 : 0
    }

    func play() {
        core.connected()
        if !isClient { controlStream = openPeer(bidirectional: true) }
        if input.bool() { peerSetup(valid: input.int(8) != 0) }
        var steps = 0
        while !input.isAtEnd && steps < 300 && violations.isEmpty {
            steps += 1
            scheduler.resetSteps()
            step()
            if !scheduler.run() { violations.append("runaway work") }
            check()
        }
        _ = scheduler.advance(by: 30_000_000_000)
        check()
        finalCheck()
    }

    private func step() {
        switch input.int(15) {
        case 0, 1, 2: control(message())
        case 3: control(input.bytes(max: 24))
        case 4, 5: groupStream()
        case 6: namespaceStream()
        case 7: peerReset()
        case 8: core.stopSending(stream: anyStream() ?? 2, wireCode: input.value())
        case 9: apiCall()
        case 10: localWrite()
        case 11:
            let steps: [UInt64] = [1_000_000, 100_000_000, 600_000_000, 2_000_000_000, 20_000_000_000]
            if !scheduler.advance(by: steps[input.int(steps.count)]) { violations.append("runaway work in time") }
        case 12:
            transport.stalled = input.bool()
            if !transport.stalled { transport.drain() }
            core.streamCreditAvailable(bidirectional: input.bool())
        case 14: peerDatagram()
        default:
            if input.int(16) == 0 {
                core.transportClosed(.transport("gone"))
            } else {
                peerSetup(valid: input.bool())
            }
        }
    }

    // MARK: The peer

    @discardableResult
    private func openPeer(bidirectional: Bool) -> Int64? {
        guard peerOpen.count < 64 else { return nil }
        let id = peerNext[bidirectional, default: 0]
        peerNext[bidirectional] = id + 4
        peerOpen.append(id)
        if input.bool() { core.streamOpened(id) }
        return id
    }

    /// The control stream: the client's first bidirectional stream.
    private var control: Int64 { isClient ? 0 : (controlStream ?? 0) }

    private func control(_ message: ControlMessage) { control(message.encoded(version: version) ?? []) }

    private func control(_ bytes: [UInt8]) { deliver(control, bytes, fin: input.int(32) == 0) }

    private func peerSetup(valid: Bool) {
        let parameters = KeyValuePairs.setup(
            path: isClient ? nil : "/anon", maxRequestID: valid ? 64 : input.value())
        if isClient {
            control(
                .serverSetup(ServerSetup(selectedVersion: valid ? version.code : input.value(), parameters: parameters))
            )
        } else {
            control(
                .clientSetup(ClientSetup(versions: valid ? [version.code] : [input.value()], parameters: parameters)))
        }
    }

    private func requestID() -> UInt64 {
        switch input.int(4) {
        case 0: return input.value()
        default:
            defer { peerRequestID &+= 2 }
            return peerRequestID
        }
    }

    private func namespace() -> TrackNamespace {
        switch input.int(4) {
        case 0: return TrackNamespace(path: "room/b")
        case 1: return TrackNamespace(path: "room")
        case 2: return TrackNamespace([Bytes(input.bytes(max: 8)), Bytes([0xFF, 0xFE])])
        default: return TrackNamespace(path: input.name())
        }
    }

    private func message() -> ControlMessage {
        switch input.int(14) {
        case 0, 1:
            let filters: [SubscriptionFilter] = [
                .largestObject, .nextGroupStart, .absoluteStart(Location(group: input.value(), object: input.value())),
                .absoluteRange(Location(group: 0, object: input.value()), endGroup: input.value()),
            ]
            return .subscribe(
                MoqtWire.Subscribe(
                    requestID: requestID(), namespace: namespace(),
                    trackName: Bytes(utf8: input.bool() ? "t" : input.name()), forward: input.bool(),
                    filter: filters[input.int(filters.count)]))
        case 2:
            // A largest location makes a LargestObject subscription join inside a group (a joining FETCH).
            let largest = input.bool() ? Location(group: UInt64(input.int(8)), object: UInt64(input.int(4))) : nil
            return .subscribeOk(SubscribeOk(requestID: ownRequest(), trackAlias: alias(), largest: largest))
        case 3:
            return .requestError(
                RequestError(
                    kind: version == .draft14 ? .subscribe : nil, requestID: ownRequest(), code: input.value()))
        case 4:
            return .publishDone(
                PublishDone(requestID: ownRequest(), statusCode: input.value(), streamCount: UInt64(input.int(6))))
        case 5: return .publishNamespace(PublishNamespace(requestID: requestID(), namespace: namespace()))
        case 6:
            return .publishNamespaceDone(
                version == .draft14 ? .namespace(namespace()) : .request(input.bool() ? requestID() : input.value()))
        case 7:
            return .subscribeNamespace(SubscribeNamespace(requestID: requestID(), prefix: namespace()))
        case 8: return .unsubscribe(requestID: input.bool() ? peerRequestID &- 2 : input.value())
        case 9: return .maxRequestID(input.value())
        case 10: return .goaway(newSessionURI: input.bool() ? "" : "moqt://elsewhere")
        case 11:
            switch input.int(4) {
            case 0:
                guard input.bool() else {
                    return .unsupported(type: [0x0D, 0x1D][input.int(2)], requestID: requestID())
                }
                let start = Location(group: UInt64(input.int(8)), object: input.value())
                let filters: [SubscriptionFilter?] = [
                    nil, .largestObject, .absoluteStart(start),
                    .absoluteRange(start, endGroup: start.group &+ UInt64(input.int(4))),
                ]
                return .requestUpdate(
                    RequestUpdate(
                        requestID: requestID(),
                        existingRequestID: input.bool() ? peerRequestID &- 2 : input.value(),
                        subscriberPriority: input.bool() ? UInt8(input.int(256)) : nil,
                        forward: input.bool() ? input.bool() : nil, filter: filters[input.int(filters.count)]))
            case 1:
                let kinds: [FetchKind] = [
                    .relativeJoining(subscription: ownRequest(), groupOffset: input.value()),
                    .absoluteJoining(subscription: ownRequest(), startGroup: input.value()),
                    .standalone(
                        namespace: namespace(), trackName: Bytes(utf8: "t"),
                        start: Location(group: 0, object: input.value()), end: Location(group: input.value(), object: 0)
                    ),
                ]
                return .fetch(MoqtWire.Fetch(requestID: requestID(), kind: kinds[input.int(kinds.count)]))
            case 2: return .fetchOk(FetchOk(requestID: ownRequest(), end: Location(group: input.value(), object: 0)))
            default: return .fetchCancel(requestID: ownRequest())
            }
        case 12:
            return .requestOk(RequestOk(kind: version == .draft14 ? .publishNamespace : nil, requestID: ownRequest()))
        default: return .requestsBlocked(maximum: input.value())
        }
    }

    /// One of the ids our core used (even for a client, odd for a server), or any value.
    private func ownRequest() -> UInt64 {
        input.int(4) == 0 ? input.value() : UInt64(input.int(8)) * 2 + (isClient ? 0 : 1)
    }

    private func alias() -> UInt64 { input.int(4) == 0 ? input.value() : UInt64(input.int(6)) }

    private func groupStream() {
        if input.bool(), let open = peerOpen.first(where: { StreamID.isUnidirectional($0) && !peerDone.contains($0) }) {
            return deliver(open, objects(after: nil), fin: input.bool())
        }
        guard let id = openPeer(bidirectional: false) else { return }
        if input.int(4) == 0 { return deliver(id, fetchStream(), fin: input.bool()) }
        let header = SubgroupHeader(
            trackAlias: alias(), group: input.int(4) == 0 ? input.value() : UInt64(input.int(8)),
            subgroup: input.int(4) == 0 ? .id(input.value()) : .zero, publisherPriority: input.bool() ? 0 : nil,
            hasExtensions: input.bool(), endOfGroup: input.bool())
        var w = WireWriter()
        header.encode(into: &w, version: version)
        var bytes = w.bytes + objects(after: header)
        if input.int(8) == 0 { bytes = input.bytes(max: 16) }
        deliver(id, bytes, fin: input.int(3) == 0)
    }

    /// A fetch stream answering one of our requests (or any): objects of a few groups from id 0.
    private func fetchStream() -> [UInt8] {
        let version = self.version
        var w = WireWriter()
        FetchHeader.encode(requestID: ownRequest(), into: &w)
        for i in 0..<input.int(4) {
            FetchObject(group: UInt64(input.int(8)), id: UInt64(i), payload: Bytes(input.bytes(max: 40)))
                .encode(into: &w, version: version)
        }
        return input.int(8) == 0 ? w.bytes + input.bytes(max: 16) : w.bytes
    }

    /// A few objects (a plausible header when given, so their layout matches; raw bytes otherwise).
    private func objects(after header: SubgroupHeader?) -> [UInt8] {
        guard let header else { return input.bytes(max: 32) }
        var w = WireWriter()
        var previous: UInt64?
        for _ in 0..<input.int(4) {
            let id = (previous ?? 0) &+ UInt64(input.int(3))
            let status: ObjectStatus = [.normal, .endOfGroup, .endOfTrack, .doesNotExist][input.int(4)]
            let payload = status == .normal ? Bytes(input.bytes(max: 40)) : Bytes()
            SubgroupObject(id: id, payload: payload, status: payload.isEmpty ? status : .normal)
                .encode(into: &w, after: previous, header: header, version: version)
            previous = id
        }
        return w.bytes
    }

    /// An OBJECT_DATAGRAM for an alias known or not: object 0 or any, a status, extensions, or raw bytes.
    private func peerDatagram() {
        let statuses: [ObjectStatus] = [.normal, .endOfGroup, .endOfTrack, .doesNotExist]
        let datagram = ObjectDatagram(
            trackAlias: alias(), group: input.int(4) == 0 ? input.value() : UInt64(input.int(8)),
            object: input.int(4) == 0 ? input.value() : 0, publisherPriority: input.bool() ? 0 : nil,
            endOfGroup: input.bool(),
            extensions: input.int(4) == 0 ? KeyValuePairs([.init(0x3C, .varint(input.value()))]) : nil,
            body: input.int(4) == 0 ? .status(statuses[input.int(4)]) : .payload(Bytes(input.bytes(max: 64))))
        let bytes = input.int(8) == 0 ? input.bytes(max: 24) : datagram.encoded(version: version)
        bytes.withUnsafeBytes { core.datagramReceived($0) }
    }

    private func namespaceStream() {
        guard let id = openPeer(bidirectional: true) else { return }
        let message = ControlMessage.subscribeNamespace(SubscribeNamespace(requestID: requestID(), prefix: namespace()))
        deliver(
            id, input.int(6) == 0 ? input.bytes(max: 16) : message.encoded(version: version) ?? [],
            fin: input.int(5) == 0)
    }

    private func anyStream() -> Int64? {
        let all = transport.ownStreams + peerOpen
        return all.isEmpty ? nil : all[input.int(all.count)]
    }

    private func peerReset() {
        let candidates =
            peerOpen.filter { !peerDone.contains($0) } + transport.ownStreams.filter { !StreamID.isUnidirectional($0) }
        guard !candidates.isEmpty else { return }
        let stream = candidates[input.int(candidates.count)]
        peerDone.insert(stream)
        core.streamReset(stream: stream, wireCode: input.value())
    }

    private func deliver(_ stream: Int64, _ bytes: [UInt8], fin: Bool) {
        guard !peerDone.contains(stream) else { return }
        var pieces = [bytes]
        if bytes.count > 1, input.bool() {
            let cut = 1 + input.int(bytes.count - 1)
            pieces = [Array(bytes[..<cut]), Array(bytes[cut...])]
        }
        for (i, piece) in pieces.enumerated() {
            if !core.isClosed { transport.delivered += piece.count }
            piece.withUnsafeBytes { core.received(stream: stream, data: $0, fin: fin && i == pieces.count - 1) }
            _ = scheduler.run()
        }
        if fin { peerDone.insert(stream) }
    }

    // MARK: Ours

    private func apiCall() {
        switch input.int(5) {
        case 4:
            if !handles.isEmpty {
                handles[input.int(handles.count)].update(
                    priority: input.bool() ? UInt8(input.int(256)) : nil, forward: input.bool() ? input.bool() : nil)
            }
        case 0, 1:
            let track = TrackProducer(name: "t", info: nil, clock: scheduler.clock, limits: SessionFuzz.cacheLimits)
            received.append(track)
            handles.append(core.subscribe(broadcast: input.bool() ? "room/b" : input.name(), track: "t", into: track))
        case 2:
            core.subscribeNamespace(prefix: input.bool() ? "" : input.name()) { _ in }
        default:
            if !handles.isEmpty { handles[input.int(handles.count)].cancel() }
        }
    }

    private func localWrite() {
        switch input.int(7) {
        case 0: media.finish()
        case 1: media.abort(.internal)
        case 6: media.writeDatagram(Bytes(input.bytes(max: 64)), timestamp: 0)
        default:
            let group = media.appendGroup()
            for _ in 0..<input.int(4) { group.write(Bytes(input.bytes(max: 64)), timestamp: 0) }
            if input.bool() { group.finish() }
        }
    }

    // MARK: Invariants

    private func check() {
        guard violations.isEmpty, !core.isClosed else { return }
        if transport.delivered != transport.consumedBytes {
            violations.append("credit: \(transport.delivered) delivered, \(transport.consumedBytes) returned")
        }
        let usage = core.resourceUsage
        if usage.openPeerRequests > config.maxPeerRequests || usage.requestIDsAhead > Int(config.maxPeerRequests)
            || usage.servedSubscriptions + usage.servedNamespaces + usage.peerNamespaces > Int(config.maxPeerRequests)
        {
            violations.append("the peer holds more requests than granted: \(usage)")
        }
        if usage.unknownAliasStreams > config.maxUnknownAliasStreams {
            violations.append(
                "\(usage.unknownAliasStreams) streams wait for an alias (bound \(config.maxUnknownAliasStreams))")
        }
        if usage.heldBytes > config.maxUnknownAliasStreams * (1024 * 1024 + 64 * 1024) {
            violations.append("\(usage.heldBytes) bytes held for unknown aliases")
        }
        if usage.queuedRequests > config.maxQueuedRequests || usage.announcedToUs > config.maxAnnounced {
            violations.append("a queue is over its bound: \(usage)")
        }
        if usage.aliases > usage.ownSubscriptions {
            violations.append("\(usage.aliases) track aliases for \(usage.ownSubscriptions) subscriptions")
        }
    }

    private func finalCheck() {
        guard violations.isEmpty, core.closeReason != nil else { return }
        if let closed = transport.closed, MoqtSessionError(rawValue: closed.code) == nil {
            violations.append("the transport was closed with \(closed.code), not a MoQ Transport code")
        }
    }
}

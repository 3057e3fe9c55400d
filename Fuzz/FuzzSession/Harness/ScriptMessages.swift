// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire

/// The messages a hostile peer's script is made of: every stream type and message, with
/// values from the edges of their ranges.
extension Script {
    // MARK: What the peer sends

    func uniStream() -> [UInt8] {
        switch input.int(5) {
        case 0: return [0x01] + setup()
        case 1, 2:
            let header = GroupHeader(subscribeID: smallOrAny(), sequence: input.value(), frameStart: smallOrAny())
            return [0x00] + header.encoded() + frames(count: input.int(4))
        case 3:
            var w = WireWriter()
            w.writeVarInt(input.value())
            return w.bytes + input.bytes(max: 16)
        default: return input.bytes(max: 32)
        }
    }

    func setup() -> [UInt8] {
        let s = Setup(
            probe: input.bool() ? input.value() : nil, path: input.bool() ? input.name() : nil,
            role: [SessionRole.both, .publisher, .subscriber, nil][input.int(4)],
            cost: input.bool() ? input.value() : nil,
            origin: input.bool() ? input.value() : nil)
        return input.int(8) == 0 ? Array(s.encoded().dropLast(input.int(3))) : s.encoded()
    }

    func request() -> [UInt8] {
        switch input.int(9) {
        case 0: return [0x01] + AnnounceRequest(prefix: input.name()).encoded()
        case 1, 2:
            return [0x02]
                + Subscribe(id: smallOrAny(), broadcast: broadcastName(), track: trackName(), range: range()).encoded()
        case 3:
            return [0x03]
                + Fetch(
                    broadcast: broadcastName(), track: trackName(), priority: input.byte(), group: smallOrAny(),
                    frameStart: smallOrAny(), frameEnd: input.bool() ? smallOrAny() : nil
                ).encoded()
        case 4: return [0x04] + (input.bool() ? [] : input.bytes(max: 8))
        case 5: return [0x05] + Goaway(uri: input.name()).encoded()
        case 6: return [0x06] + TrackRequest(broadcast: broadcastName(), track: trackName()).encoded()
        case 7:
            var w = WireWriter()
            w.writeVarInt(input.value())
            return w.bytes + input.bytes(max: 16)
        default: return input.bytes(max: 64)
        }
    }

    /// What the peer answers on a stream the core opened (by what the core asked there).
    func response(on stream: Int64) -> [UInt8] {
        switch input.int(8) {
        case 0: return AnnounceOk(hopID: input.value(), activeCount: smallOrAny()).encoded()
        case 1: return announcement()
        case 2:
            switch input.int(4) {
            case 0: return SubscribeResponse.start(group: smallOrAny()).encoded()
            case 1: return SubscribeResponse.end(group: smallOrAny()).encoded()
            case 2: return SubscribeResponse.drop(start: smallOrAny(), end: smallOrAny(), code: input.value()).encoded()
            default: return SubscribeResponse.unknown(type: input.value()).encoded()
            }
        case 3:
            var w = WireWriter()
            w.writeSizePrefixed {
                $0.writeUInt8(self.input.byte())
                $0.writeVarInt(self.input.value())
                $0.writeVarInt(self.input.bool() ? 1_000_000 : self.input.value())
            }
            return w.bytes
        case 4: return frames(count: 1 + input.int(3))
        case 5: return Probe(bitrate: input.value(), rttMs: input.value()).encoded()
        default: return input.bytes(max: 48)
        }
    }

    func announcement() -> [UInt8] {
        let route = AnnounceRoute(
            hops: (0..<input.int(36)).map { _ in input.value() }, costWarm: input.value(), costCold: input.value())
        switch input.int(4) {
        case 0, 1: return Announcement.start(suffix: input.name(), route: route).encoded()
        case 2: return Announcement.end(id: smallOrAny()).encoded()
        default: return Announcement.update(id: smallOrAny(), route: route).encoded()
        }
    }

    /// Frames `zigzag(Δ), size, payload`, the deltas and sizes from the edges.
    func frames(count: Int) -> [UInt8] {
        var w = WireWriter()
        for _ in 0..<count {
            w.writeVarInt(input.bool() ? UInt64(input.byte()) : input.value())
            let size = input.int(4) == 0 ? input.value() : UInt64(input.int(40))
            w.writeVarInt(size)
            w.writeBytes(input.bytes(max: Int(min(size, 64))))
        }
        return w.bytes
    }

    func range() -> SubscriptionRange {
        SubscriptionRange(
            priority: input.byte(), maxLatencyMs: input.bool() ? UInt64(input.int(3000)) : input.value(),
            groupStart: smallOrAny(), groupEnd: input.bool() ? smallOrAny() : nil, frameStart: smallOrAny(),
            frameEnd: input.bool() ? smallOrAny() : nil)
    }

    func smallOrAny() -> UInt64 { input.bool() ? UInt64(input.int(8)) : input.value() }
    func broadcastName() -> String { input.int(3) == 0 ? input.name() : "b" }
    func trackName() -> String { ["t", "d", "x1", "x2", "none"][input.int(5)] }
}

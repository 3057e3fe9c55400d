// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

@Suite("Group age: arrival or timestamps, whichever is worse")
struct GroupAgeTests {
    @Test("a burst of cached groups arriving at once is still as old as its timestamps say")
    func burstKeepsItsAge() {
        let clock = VirtualClock()
        let track = TrackProducer(name: "audio", info: TrackInfo(maxAgeMs: 30_000, timescale: 1_000_000), clock: clock)
        // 2 s of 20 ms audio frames, all received in the same instant (a relay catching up).
        for i in 0..<100 {
            track.writeSingleFrameGroup(Bytes([UInt8(i)]), timestamp: UInt64(i) * 20_000)
        }
        let groups = track.groups(from: 0)
        let newest = groups.last!
        #expect(newest.age(of: groups[0]) == 1_980_000_000)
        #expect(newest.age(of: groups[95]) == 80_000_000)
        // A reader with a 100 ms budget starts with the groups of the last 100 ms, not 2 s back.
        let consumer = TrackConsumer(track: track, maxLatencyMs: 100)
        guard case .group(let first) = consumer.poll() else {
            Issue.record("expected a group")
            return
        }
        #expect(first.sequence == 94)  // 99 − 94 = 5 groups × 20 ms = 100 ms: within the budget
    }

    @Test("arrival still counts when timestamps do not move (data tracks stamped 0)")
    func arrivalStillCounts() {
        let clock = VirtualClock()
        let track = TrackProducer(name: "data", info: TrackInfo(maxAgeMs: 30_000), clock: clock)
        track.writeSingleFrameGroup(Bytes([1]), timestamp: 0)
        clock.advance(by: 500_000_000)
        track.writeSingleFrameGroup(Bytes([2]), timestamp: 0)
        let groups = track.groups(from: 0)
        #expect(groups[1].age(of: groups[0]) == 500_000_000)
        #expect(groups[0].age(of: groups[1]) == 0)
    }
}

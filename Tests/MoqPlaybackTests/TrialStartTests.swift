// SPDX-License-Identifier: MIT
import MoqPlayback
import MoqWire
import Testing

@Suite("TrialStart: a trial starts at the higher rung's next group")
struct TrialStartTests {
    @Test("aligned numberings: the group after the playing one")
    func aligned() {
        let start = TrialStart()
        #expect(start.floor(for: "hi", playing: "mid", sequence: 12) == 13)
    }

    @Test("numberings that differ are learnt from a trial's first group, for later trials both ways")
    func learnt() {
        var start = TrialStart()
        // hi's group 40 started with mid's group 12.
        start.learn(rung: "hi", sequence: 40, playing: "mid", playingSequence: 12)
        #expect(start.floor(for: "hi", playing: "mid", sequence: 20) == 49)
        #expect(start.floor(for: "mid", playing: "hi", sequence: 49) == 22)
        // lo runs 5 behind hi: learnt while hi plays.
        start.learn(rung: "lo", sequence: 44, playing: "hi", playingSequence: 49)
        #expect(start.floor(for: "mid", playing: "lo", sequence: 44) == 22)
        // A floor below zero in the other numbering: none.
        #expect(start.floor(for: "mid", playing: "hi", sequence: 3) == nil)
    }

    @Test("a floor that never came turns floors off")
    func failed() {
        var start = TrialStart()
        start.floorFailed()
        #expect(start.disabled)
        #expect(start.floor(for: "hi", playing: "mid", sequence: 12) == nil)
    }

    @Test("sequences at the varint ceiling: no floor beyond it, no trap")
    func ceiling() {
        var start = TrialStart()
        #expect(start.floor(for: "hi", playing: "mid", sequence: VarInt.max) == nil)
        #expect(start.floor(for: "hi", playing: "mid", sequence: VarInt.max - 1) == VarInt.max)
        #expect(start.floor(for: "hi", playing: "mid", sequence: .max) == nil)
        start.learn(rung: "hi", sequence: VarInt.max, playing: "mid", playingSequence: 0)
        #expect(start.floor(for: "hi", playing: "mid", sequence: 0) == nil)
        start.learn(rung: "lo", sequence: 0, playing: "hi", playingSequence: VarInt.max)
        #expect(start.floor(for: "lo", playing: "mid", sequence: VarInt.max - 1) == VarInt.max)
        start.learn(rung: "x", sequence: .max, playing: "mid", playingSequence: 0)
        #expect(start.floor(for: "x", playing: "mid", sequence: 1) == 2, "a sequence past the ceiling is not learnt")
    }
}

// SPDX-License-Identifier: MIT
import MoqSession
import Testing

/// `#expect` cannot wrap a mutating call.
private func admit(_ position: inout ResumePosition, group: UInt64, index: UInt64, timestamp: UInt64) -> Bool {
    position.admit(group: group, index: index, timestamp: timestamp)
}

@Suite("ResumePosition: each frame once across resubscriptions")
struct ResumePositionTests {
    @Test("a resubscription that repeats the last groups: the repeats are skipped, the rest delivered")
    func repeatsSkipped() {
        var position = ResumePosition()
        for g in UInt64(0)..<5 { #expect(admit(&position, group: g, index: 0, timestamp: g * 20_000)) }
        #expect(admit(&position, group: 5, index: 0, timestamp: 100_000))
        #expect(admit(&position, group: 5, index: 1, timestamp: 110_000))
        // The new subscription starts at the oldest group within the budget: 3, 4 and the
        // first two frames of 5 are repeats; the third frame of 5 and group 6 are new.
        #expect(!admit(&position, group: 3, index: 0, timestamp: 60_000))
        #expect(!admit(&position, group: 4, index: 0, timestamp: 80_000))
        #expect(!admit(&position, group: 5, index: 0, timestamp: 100_000))
        #expect(!admit(&position, group: 5, index: 1, timestamp: 110_000))
        #expect(admit(&position, group: 5, index: 2, timestamp: 120_000))
        #expect(admit(&position, group: 6, index: 0, timestamp: 140_000))
        #expect(position.repeats == 4)
        #expect(position.restarts == 0)
    }

    @Test("a restarted publisher (groups from 0, timestamps from 0): a new timeline, delivered")
    func restartedPublisher() {
        var position = ResumePosition(timelineTolerance: 2_000_000)
        #expect(admit(&position, group: 500, index: 0, timestamp: 60_000_000))
        #expect(admit(&position, group: 0, index: 0, timestamp: 0))
        #expect(admit(&position, group: 1, index: 0, timestamp: 20_000))
        #expect(position.restarts == 1)
        // Its own repeats are recognised from there on.
        #expect(!admit(&position, group: 0, index: 0, timestamp: 0))
    }

    @Test("lower groups with newer timestamps (a publisher whose clock is the wall): a new timeline")
    func newerTimestampsRestart() {
        var position = ResumePosition()
        #expect(admit(&position, group: 9, index: 3, timestamp: 1_000_000))
        #expect(admit(&position, group: 0, index: 0, timestamp: 5_000_000))
        #expect(position.restarts == 1 && position.repeats == 0)
    }

    @Test("values at the varint ceiling neither trap nor wrap")
    func ceiling() {
        let max = UInt64(1) << 62 - 1
        var position = ResumePosition(timelineTolerance: max)
        #expect(admit(&position, group: max, index: max, timestamp: max))
        #expect(!admit(&position, group: max, index: max, timestamp: 0))
        #expect(position.repeats == 1)
    }
}

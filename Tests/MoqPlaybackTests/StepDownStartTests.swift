// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import MoqSession
import MoqWire
import Testing

@Suite("StepDownStart: a step down's first group, or the next one")
struct StepDownStartTests {
    /// 1 s groups; the last frame shown at 10.6 s; the lower rung takes 0.5 of 0.72 Mbit/s.
    func start(shownUs: UInt64 = 10_600_000, groupUs: UInt64? = 1_000_000, budget: Double? = 720_000)
        -> StepDownStart
    {
        StepDownStart(lastShownUs: shownUs, groupDurationUs: groupUs, bitrateBps: 500_000, budgetBps: budget)
    }

    @Test("a group that started long ago waits for the next when that comes before its backlog would drain")
    func staleGroupWaits() {
        // 600 ms of backlog at 0.22 Mbit/s spare: 1.4 s; the next group in 400 ms.
        #expect(start().waitsForNextGroup(groupStartUs: 10_000_000))
        // Without measures the backlog counts twice its span: 1.2 s against 0.4 s.
        #expect(start(budget: nil).waitsForNextGroup(groupStartUs: 10_000_000))
    }

    @Test("a group that started a moment ago is fetched: its backlog is small, the next group far")
    func freshGroupIsFetched() {
        // Within reach of the last frame shown: a few frames to decode.
        #expect(!start().waitsForNextGroup(groupStartUs: 10_400_000))
        // 300 ms behind: 0.68 s of backlog against a 0.7 s wait.
        #expect(!start().waitsForNextGroup(groupStartUs: 10_300_000))
        // At or after the last frame shown: nothing to catch up.
        #expect(!start().waitsForNextGroup(groupStartUs: 10_600_000))
        #expect(!start().waitsForNextGroup(groupStartUs: 10_700_000))
    }

    @Test("unknown or long groups, and a group older than one group's span, are fetched")
    func boundsOfTheWait() {
        #expect(!start(groupUs: nil).waitsForNextGroup(groupStartUs: 10_000_000))
        // 10 s groups: a wait of 9.4 s is never chosen (at most 1.5 s).
        #expect(!start(groupUs: 10_000_000).waitsForNextGroup(groupStartUs: 10_000_000))
        // 2 s groups, 1.6 s elapsed: the next in 0.4 s.
        #expect(start(groupUs: 2_000_000).waitsForNextGroup(groupStartUs: 9_000_000))
        // Older than a group lasts: the boundaries are not where this rung's were.
        #expect(!start().waitsForNextGroup(groupStartUs: 9_000_000))
        // Timestamps at the varint ceiling do not trap.
        let far = StepDownStart(
            lastShownUs: UInt64(1) << 62 - 1, groupDurationUs: UInt64(1) << 62 - 1, bitrateBps: 1e12, budgetBps: 1)
        _ = far.waitsForNextGroup(groupStartUs: 0)
    }

    @Test("a reader knows its groups' duration from the two newest consecutive groups")
    func groupDuration() throws {
        let track = TrackProducer(name: "video")
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        #expect(reader.groupDurationUs == nil)
        for start: UInt64 in [0, 2_000_000, 4_000_000] {
            let group = track.appendGroup()
            _ = group.write(try LegacyFrame(timestamp: start, payload: Bytes([1])).encoded(), timestamp: start)
            group.finish()
        }
        #expect(reader.groupDurationUs == 2_000_000)
    }

    @Test("a group abandoned while it arrives takes no more frames; what it had stays readable")
    func abandon() throws {
        let track = TrackProducer(name: "video")
        let group = track.appendGroup()
        #expect(group.write(Bytes([1]), timestamp: 0))
        track.abandon(sequence: group.sequence)
        #expect(!group.write(Bytes([2]), timestamp: 1), "the group stream's reader stops it (STOP_SENDING)")
        #expect(group.status == .aborted(.cancel))
        #expect(track.frames(of: group.group, from: 0).frames.count == 1)
        // The next group is untouched.
        #expect(track.appendGroup().write(Bytes([3]), timestamp: 2))
    }
}

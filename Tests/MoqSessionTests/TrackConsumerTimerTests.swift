// SPDX-License-Identifier: MIT
import MoqSession
import MoqTestKit
import MoqWire
import Synchronization
import Testing

/// The async reader's wait for a missing group is a timer on the session's scheduler, so virtual
/// time drives it (it was a wall-clock dispatch source).
@Suite("TrackConsumer: gap waits on the session scheduler")
struct TrackConsumerTimerTests {
    /// A track on a virtual clock and a reader from group 0 whose gap timers run on it.
    static func virtualTrack() -> (VirtualScheduler, TrackProducer, TrackConsumer) {
        let scheduler = VirtualScheduler()
        let track = TrackProducer(name: "t", clock: scheduler.virtualClock)
        return (scheduler, track, TrackConsumer(track: track, startAt: 0, timers: scheduler))
    }

    /// Until the reader's gap timer is armed (it parked on a missing group).
    static func readerParked(_ scheduler: VirtualScheduler) async throws {
        try await eventually("the reader's timer", timeout: .seconds(5), every: .milliseconds(2)) {
            scheduler.pendingTimers > 0
        }
    }

    @Test("a missing group is given up after the reorder window of virtual time, not before")
    func missingGroupGivenUpOnVirtualTime() async throws {
        let (scheduler, track, consumer) = Self.virtualTrack()
        _ = track.createGroup(sequence: 0)?.finish()
        _ = track.createGroup(sequence: 2)?.finish()
        #expect(try await consumer.nextGroup()?.sequence == 0)

        let got = Atomic<UInt64>(.max)
        let reader = Task {
            let g = try await consumer.nextGroup()
            got.store(g?.sequence ?? 99, ordering: .releasing)
        }
        // The reader parks on group 1 (missing) until the window passes on the virtual clock.
        try await Self.readerParked(scheduler)
        scheduler.advance(by: .milliseconds(Int64(TrackConsumer.defaultReorderWindowMs) - 1))
        // The sleep is the thing under test: 1 ms before the window ends, the reader must still wait.
        try await Task.sleep(for: .milliseconds(20))
        #expect(got.load(ordering: .acquiring) == .max)
        scheduler.advance(by: .milliseconds(1))
        try await reader.value
        #expect(got.load(ordering: .acquiring) == 2)
        #expect(consumer.groupsSkipped == 1)
    }

    @Test("an arrival ends the wait and cancels its timer")
    func arrivalCancelsTheTimer() async throws {
        let (scheduler, track, consumer) = Self.virtualTrack()
        _ = track.createGroup(sequence: 1)?.finish()
        let reader = Task { try await consumer.nextGroup()?.sequence }
        try await Self.readerParked(scheduler)
        _ = track.createGroup(sequence: 0)?.finish()
        #expect(try await reader.value == 0)
        #expect(scheduler.pendingTimers == 0)
    }

}

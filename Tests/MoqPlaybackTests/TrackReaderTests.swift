// SPDX-License-Identifier: MIT
import Foundation
import MoqCatalog
import MoqPlayback
import MoqSession
import MoqWire
import Testing

@Suite("TrackReader: blocking reads of a received track for a pad's thread")
struct TrackReaderTests {
    func legacy(_ us: UInt64, _ bytes: [UInt8]) -> Bytes {
        try! LegacyFrame(timestamp: us, payload: Bytes(bytes)).encoded()
    }

    /// A new group of `track` holding hang legacy frames (timestamp µs, payload), left open.
    @discardableResult
    func group(_ track: TrackProducer, _ frames: [(UInt64, [UInt8])]) -> GroupProducer {
        let g = track.appendGroup()
        for (us, bytes) in frames { _ = g.write(legacy(us, bytes), timestamp: us) }
        return g
    }

    @Test("frames in group order with their timestamps; hang's empty end-of-group frames are skipped")
    func framesAndEndOfGroup() {
        let track = TrackProducer(name: "0.avc3")
        let g0 = group(track, [(0, [1]), (33_333, [2])])
        _ = g0.write(try! LegacyFrame.endOfGroup(timestamp: 66_666), timestamp: 66_666)
        g0.finish()
        group(track, [(66_666, [3])])
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        var seen: [(UInt64, Int, UInt64, [UInt8])] = []
        for _ in 0..<3 {
            guard case .frame(let f) = reader.next(waitingUpTo: 1_000_000_000) else {
                Issue.record("expected a frame")
                return
            }
            seen.append((f.group, f.index, f.timestampUs, f.payload.array))
        }
        #expect(seen.map(\.0) == [0, 0, 1])
        #expect(seen.map(\.1) == [0, 1, 0])
        #expect(seen.map(\.2) == [0, 33_333, 66_666])
        #expect(seen.map(\.3) == [[1], [2], [3]])
        #expect(reader.liveEdgeUs == 66_666)
        #expect(reader.hasGroup(after: 0) && !reader.hasGroup(after: 1))
        if case .idle = reader.next(waitingUpTo: 20_000_000) {} else { Issue.record("expected idle") }
        track.finish()
        if case .ended = reader.next(waitingUpTo: 1_000_000_000) {} else { Issue.record("expected the end") }
    }

    @Test("a frame that is not a legacy frame is reported, and reading goes on")
    func malformed() {
        let track = TrackProducer(name: "audio")
        track.writeSingleFrameGroup(Bytes([0xC0]), timestamp: 0)  // an 8-byte varint cut short
        track.writeSingleFrameGroup(legacy(20_000, [9]), timestamp: 20_000)
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        guard case .malformed(let group, let index, _) = reader.next(waitingUpTo: 1_000_000_000) else {
            Issue.record("expected a malformed frame")
            return
        }
        #expect(group == 0 && index == 0)
        guard case .frame(let f) = reader.next(waitingUpTo: 1_000_000_000) else {
            Issue.record("expected the next frame")
            return
        }
        #expect(f.timestampUs == 20_000)
    }

    @Test("a blocked read wakes for a frame written on another thread, and for cancel()")
    func wakesUp() {
        let track = TrackProducer(name: "audio")
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        // Plain threads: the reader blocks its thread, as a pad task does.
        Thread.detachNewThread {
            usleep(50_000)
            track.writeSingleFrameGroup(try! LegacyFrame(timestamp: 5, payload: Bytes([1])).encoded(), timestamp: 5)
        }
        let start = ContinuousClock.now
        guard case .frame(let f) = reader.next(waitingUpTo: 5_000_000_000) else {
            Issue.record("expected the frame")
            return
        }
        #expect(f.timestampUs == 5)
        #expect(ContinuousClock.now - start < .seconds(4), "woke by the write, not the timeout")
        Thread.detachNewThread {
            usleep(50_000)
            reader.cancel()
        }
        guard case .failed(.cancelled) = reader.next(waitingUpTo: 5_000_000_000) else {
            Issue.record("expected cancellation")
            return
        }
    }

    @Test("skipRestOfGroup moves to the next group")
    func skipGroup() {
        let track = TrackProducer(name: "v")
        group(track, [(0, [1]), (1, [2])]).finish()
        group(track, [(2, [3])])
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        _ = reader.next(waitingUpTo: 1_000_000_000)
        reader.skipRestOfGroup()
        guard case .frame(let f) = reader.next(waitingUpTo: 1_000_000_000) else {
            Issue.record("expected a frame")
            return
        }
        #expect(f.group == 1 && f.payload.array == [3])
    }

    @Test("a group that stops making progress is abandoned for a newer one after the budget")
    func stalledGroup() {
        let track = TrackProducer(name: "v")
        let g0 = track.appendGroup()
        _ = g0.write(legacy(0, [1]), timestamp: 0)  // never finished
        let g1 = track.appendGroup()
        _ = g1.write(legacy(40_000, [2]), timestamp: 40_000)
        let reader = TrackReader(track: track, maxLatencyMs: 50)
        guard case .frame(let first) = reader.next(waitingUpTo: 1_000_000_000), first.group == 0 else {
            Issue.record("expected group 0")
            return
        }
        guard case .frame(let next) = reader.next(waitingUpTo: 2_000_000_000) else {
            Issue.record("expected group 1 after the stalled one")
            return
        }
        #expect(next.group == 1)
        _ = reader.next(waitingUpTo: 10_000_000)
        #expect(reader.groupsSkipped == 1)
    }
}

// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import MoqSession
import MoqWire
import Testing

@Suite("TrackReader: seeking within what is cached")
struct TrackReaderSeekTests {
    func legacy(_ us: UInt64) -> Bytes {
        try! LegacyFrame(timestamp: us, payload: Bytes([UInt8(truncatingIfNeeded: us / 1000)])).encoded()
    }

    /// Four video-like groups of three frames, 100 ms apart: 0, 100, 200, 300 ms.
    func videoTrack() -> TrackProducer {
        let track = TrackProducer(name: "video")
        for g in 0..<4 {
            let group = track.appendGroup()
            for f in 0..<3 {
                let us = UInt64(g * 100_000 + f * 33_000)
                _ = group.write(legacy(us), timestamp: us)
            }
            group.finish()
        }
        return track
    }

    func read(_ reader: TrackReader, _ count: Int) -> [UInt64] {
        (0..<count).compactMap {
            _ in
            if case .frame(let f) = reader.next(waitingUpTo: 100_000_000) { return f.timestampUs }
            return nil
        }
    }

    @Test("group lookups: the group holding a time, the first starting at or after it, and the edges")
    func lookups() {
        let reader = TrackReader(track: videoTrack(), maxLatencyMs: nil)
        #expect(reader.groupStart(atOrBefore: 150_000)?.startUs == 100_000)
        #expect(reader.groupStart(atOrBefore: 200_000)?.startUs == 200_000)
        #expect(reader.groupStart(atOrBefore: 10_000_000)?.startUs == 300_000)
        // Older than anything cached: the oldest group.
        #expect(reader.groupStart(atOrBefore: 0)?.sequence == 0)
        #expect(reader.groupStart(atOrAfter: 150_000)?.startUs == 200_000)
        #expect(reader.groupStart(atOrAfter: 300_001) == nil)
        #expect(TrackReader(track: TrackProducer(name: "empty"), maxLatencyMs: nil).groupStart(atOrBefore: 0) == nil)
    }

    @Test("open groups that started before a time: still arriving, not finished or aborted, not later")
    func openGroupsStartedBefore() {
        let track = videoTrack()
        let arriving = track.appendGroup()
        _ = arriving.write(legacy(400_000), timestamp: 400_000)
        let next = track.appendGroup()
        _ = next.write(legacy(500_000), timestamp: 500_000)
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        #expect(reader.openGroups(startedBefore: 450_000) == [arriving.sequence])
        #expect(reader.openGroups(startedBefore: 600_000) == [arriving.sequence, next.sequence])
        #expect(reader.openGroups(startedBefore: 400_000).isEmpty, "the finished ones are not")
        track.abandon(sequence: arriving.sequence)
        #expect(reader.openGroups(startedBefore: 600_000) == [next.sequence])
    }

    @Test("seeking back and forth: reading restarts at the group holding the target")
    func seekVideo() {
        let reader = TrackReader(track: videoTrack(), maxLatencyMs: nil)
        #expect(read(reader, 7) == [0, 33_000, 66_000, 100_000, 133_000, 166_000, 200_000])
        #expect(reader.seek(toTimestampUs: 150_000, dropEarlier: false) == 100_000)
        #expect(read(reader, 4) == [100_000, 133_000, 166_000, 200_000])
        #expect(reader.seek(toTimestampUs: 320_000, dropEarlier: false) == 300_000)
        #expect(read(reader, 3) == [300_000, 333_000, 366_000])
        #expect(reader.seek(toTimestampUs: 0, dropEarlier: false) == 0)
        #expect(read(reader, 1) == [0])
    }

    @Test("dropEarlier: frames of the target's group before it are skipped (audio)")
    func seekDroppingEarlierFrames() {
        let reader = TrackReader(track: videoTrack(), maxLatencyMs: nil)
        #expect(reader.seek(toTimestampUs: 140_000, dropEarlier: true) == 140_000)
        #expect(read(reader, 3) == [166_000, 200_000, 233_000])
    }

    @Test("nothing cached: the seek says so and the reader is unchanged")
    func seekWithNothingCached() {
        let track = TrackProducer(name: "audio")
        let reader = TrackReader(track: track, maxLatencyMs: nil)
        #expect(reader.seek(toTimestampUs: 5_000, dropEarlier: true) == nil)
        track.writeSingleFrameGroup(legacy(1_000), timestamp: 1_000)
        #expect(read(reader, 1) == [1_000])
    }
}

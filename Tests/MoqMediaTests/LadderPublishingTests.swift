// SPDX-License-Identifier: MIT
import MoqMedia
import Testing

/// What moqsink does for a ladder: keyframes on a running-time grid, a bitrate for the catalog.
@Suite("publishing a ladder: the keyframe grid and the measured bitrate")
struct LadderPublishingTests {
    static let ms: UInt64 = 1_000_000

    @Test("each grid point is asked for once, in order, up to two periods ahead")
    func grid() {
        var grid = KeyframeGrid(periodNs: 1_000 * Self.ms)
        #expect(grid.frame(atNs: 0) == [1_000 * Self.ms, 2_000 * Self.ms])
        #expect(grid.frame(atNs: 33 * Self.ms) == [])
        #expect(grid.frame(atNs: 999 * Self.ms) == [])
        #expect(grid.frame(atNs: 1_000 * Self.ms) == [3_000 * Self.ms])
        // A gap in the input (a paused source): the points it skipped are not asked for.
        #expect(grid.frame(atNs: 10_000 * Self.ms) == [11_000 * Self.ms, 12_000 * Self.ms])
        #expect(grid.frame(atNs: 10_010 * Self.ms) == [])
        #expect(grid.frame(atNs: 11_000 * Self.ms) == [13_000 * Self.ms])
    }

    @Test("running times at the end of time ask for nothing")
    func overflow() {
        var grid = KeyframeGrid(periodNs: 1_000 * Self.ms)
        #expect(grid.frame(atNs: UInt64.max) == [])
        #expect(grid.frame(atNs: UInt64.max - 1_500 * Self.ms).count <= 4)
    }

    @Test("the bitrate is the largest whole second, published first, then only when it grew by a tenth")
    func meter() {
        var meter = BitrateMeter()
        var published: [UInt64] = []
        // 1 Mbit/s for 3 s (30 frames of 4166 bytes a second), then 1.05, then 1.5 Mbit/s.
        for (second, bytesPerFrame) in [(0, 4_166), (1, 4_166), (2, 4_166), (3, 4_375), (4, 6_250), (5, 6_250)] {
            for frame in 0..<30 {
                let at = UInt64(second) * 1_000 * Self.ms + UInt64(frame) * 33 * Self.ms
                if let bps = meter.observe(size: bytesPerFrame, atNs: at) { published.append(bps) }
            }
        }
        let expected: [UInt64] = [30 * 4_166 * 8, 30 * 6_250 * 8]
        #expect(published == expected, "1.05 is not a tenth more: no rewrite")
    }
}

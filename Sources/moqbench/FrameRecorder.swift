// SPDX-License-Identifier: MIT
import SwiftMoQ

/// What one subscription received: frame and byte counts, sequence order, and publish-to-receive
/// latencies (receive time minus the stamp in the payload, both `CLOCK_MONOTONIC`).
struct FrameRecorder {
    /// Frames whose sequence is below this are counted but not measured (connection warm-up).
    let warmupFrames: UInt64
    private(set) var frames: UInt64 = 0
    private(set) var bytes: UInt64 = 0
    private(set) var groups: UInt64 = 0
    private(set) var highestSeq: UInt64?
    private(set) var outOfOrder: UInt64 = 0
    /// The first sequence number received, and how many times one was followed by another that
    /// is not the next (where frames went missing: at the start, or in runs along the way).
    private(set) var firstSeq: UInt64?
    private(set) var seqGaps: UInt64 = 0
    /// Groups that ended with an error (reset by a relay) after `groups` counted them.
    private(set) var groupErrors: UInt64 = 0
    private(set) var firstArrival: UInt64?
    private(set) var lastArrival: UInt64?
    /// Latencies in µs, in arrival order.
    private(set) var latenciesMicros: [Int] = []

    init(warmupFrames: UInt64) { self.warmupFrames = warmupFrames }

    /// Counts a group's start.
    mutating func groupStarted() { groups += 1 }

    /// Counts a group that ended with an error.
    mutating func groupFailed() { groupErrors += 1 }

    /// Records a frame received at `now` (ns).
    mutating func record(_ payload: Bytes, at now: UInt64) {
        frames += 1
        bytes += UInt64(payload.count)
        if firstArrival == nil { firstArrival = now }
        lastArrival = now
        guard let (seq, stamp) = StampedPayload.parse(payload) else { return }
        if let highest = highestSeq, seq < highest { outOfOrder += 1 }
        if let highest = highestSeq, seq > highest &+ 1 { seqGaps += 1 }
        if firstSeq == nil { firstSeq = seq }
        highestSeq = max(highestSeq ?? seq, seq)
        if seq >= warmupFrames { latenciesMicros.append(now >= stamp ? Int((now - stamp) / 1000) : 0) }
    }

    /// The result fields every subscriber role reports.
    var fields: [(String, JSONField)] {
        [
            ("frames", .int(Int(frames))), ("bytes", .int(Int(bytes))), ("groups", .int(Int(groups))),
            ("highest_seq", .int(highestSeq.map { Int($0) } ?? -1)), ("out_of_order", .int(Int(outOfOrder))),
            ("group_errors", .int(Int(groupErrors))), ("first_seq", .int(firstSeq.map { Int($0) } ?? -1)),
            ("seq_gaps", .int(Int(seqGaps))),
            ("first_ns", .int(Int(firstArrival ?? 0))), ("last_ns", .int(Int(lastArrival ?? 0))),
            ("latencies_us", .ints(latenciesMicros)), ("cpu_s", .double(Monotonic.processCPUSeconds())),
        ]
    }
}

// SPDX-License-Identifier: MIT

/// Keyframes on a running-time grid, so that several encoders fed one picture (a `tee` into a
/// ladder) start their groups at the same frame: a player can then change rendition at any group
/// boundary. moqsink asks every video pad's encoder for a keyframe at each grid point, ahead of
/// time (GstVideoEncoder keeps the request until a frame at or after that running time arrives
/// and flags that one; every branch sees the same frames, so every branch flags the same frame).
///
/// Requests go two grid points ahead: an encoder that looks ahead (x264's default lookahead is
/// over a second) has already taken in the frames of the next grid point.
public struct KeyframeGrid: Sendable, Equatable {
    /// The grid's period (ns).
    public let periodNs: UInt64
    /// The latest grid point asked for.
    private var requestedNs: UInt64?

    /// A grid of `periodNs` (> 0).
    public init(periodNs: UInt64) {
        self.periodNs = max(1, periodNs)
    }

    /// A frame at running time `runningNs` passes: the grid points to ask the encoder for now
    /// (each once, in order), at most two periods ahead.
    public mutating func frame(atNs runningNs: UInt64) -> [UInt64] {
        let (index, overflow) = (runningNs / periodNs).addingReportingOverflow(2)
        guard !overflow else { return [] }
        let horizon = index.multipliedReportingOverflow(by: periodNs)
        guard !horizon.overflow else { return [] }
        // Not behind this frame: a point already passed would only flag the next frame.
        var first = (runningNs / periodNs + 1) * periodNs
        if let requested = requestedNs {
            guard requested < horizon.partialValue else { return [] }
            first = max(first, requested + periodNs)
        }
        var points: [UInt64] = []
        var point = first
        while point <= horizon.partialValue, points.count < 4 {
            points.append(point)
            point += periodNs
        }
        if let last = points.last { requestedNs = last }
        return points
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPipeline
import MoqSync

/// Records when each frame passes a pad (`CLOCK_MONOTONIC` ns), keyed by the frame's publisher
/// timestamp in µs: the buffer's PTS before `moqsink` (a live source's PTS is its running time,
/// which moqsink publishes), or the `timestamp/x-moq-publisher` meta after `moqsrc`.
final class StageProbe: Sendable {
    enum Key: Sendable {
        /// The buffer's PTS (the publisher's pipeline).
        case pts
        /// The publisher-time reference meta moqsrc attaches (the player's pipeline).
        case publisherMeta
    }

    private struct State {
        var times: [UInt64: UInt64] = [:]
        var ptsByKey: [UInt64: UInt64] = [:]
    }

    private let key: Key
    private let state = Lock(State())
    private nonisolated(unsafe) let reference = gst_caps_new_empty_simple("timestamp/x-moq-publisher")!
    /// Frames recorded at most (a run of 10 s at 30 fps needs 300).
    static let capacity = 20_000

    init(key: Key) { self.key = key }

    deinit { gst_caps_unref(reference) }

    /// When the frame with publisher timestamp `us` passed (monotonic ns).
    func time(of us: UInt64) -> UInt64? { state.withLock { $0.times[us] } }

    /// The buffer PTS of that frame here (the player's running time, for its render deadline).
    func pts(of us: UInt64) -> UInt64? { state.withLock { $0.ptsByKey[us] } }

    /// Every publisher timestamp recorded.
    var keys: [UInt64] { state.withLock { Array($0.times.keys) } }

    /// Probes the `src` pad of `element`.
    func attach(to element: ElementHandle, pad name: String = "src") throws(BenchError) {
        guard let pad = gst_element_get_static_pad(element.object.pointer, name) else {
            throw .runtime("\(element.name) has no pad \(name)")
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(pad)) }
        let context = Unmanaged.passRetained(self).toOpaque()
        gst_pad_add_probe(
            pad, GST_PAD_PROBE_TYPE_BUFFER,
            { _, info, data in
                guard let data, let buffer = info?.pointee.data else { return GST_PAD_PROBE_OK }
                Unmanaged<StageProbe>.fromOpaque(data).takeUnretainedValue().observe(
                    buffer.assumingMemoryBound(to: GstBuffer.self))
                return GST_PAD_PROBE_OK
            }, context, { data in Unmanaged<StageProbe>.fromOpaque(data!).release() })
    }

    private func observe(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let now = Monotonic.now()
        let pts = swiftmoq_buffer_pts(buffer)
        let us: UInt64
        switch key {
        case .pts:
            guard swiftmoq_clock_time_is_valid(pts) != 0 else { return }
            us = UInt64(pts) / 1000
        case .publisherMeta:
            guard let meta = gst_buffer_get_reference_timestamp_meta(buffer, reference) else { return }
            us = UInt64(meta.pointee.timestamp) / 1000
        }
        state.withLock { s in
            guard s.times[us] == nil, s.times.count < Self.capacity else { return }
            s.times[us] = now
            if swiftmoq_clock_time_is_valid(pts) != 0 { s.ptsByKey[us] = UInt64(pts) }
        }
    }
}

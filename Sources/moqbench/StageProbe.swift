// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPipeline
import MoqSync

/// Records when each frame passes a pad (`CLOCK_MONOTONIC` ns), keyed by the frame's publisher
/// timestamp in µs: the buffer's running time before `moqsink` (what moqsink publishes; an encoder
/// shifts PTS and segment by 1000 h, the running time stays), or the `timestamp/x-moq-publisher`
/// meta after `moqsrc`.
final class StageProbe: Sendable {
    enum Key: Sendable {
        /// The buffer's running time (the publisher's pipeline).
        case runningTime
        /// The publisher-time reference meta moqsrc attaches (the player's pipeline).
        case publisherMeta
    }

    private struct State {
        var times: [UInt64: UInt64] = [:]
        var ptsByKey: [UInt64: UInt64] = [:]
        var segment = SegmentBox()
        var hasSegment = false
    }

    /// A segment (plain numbers; its reserved pointers are never used) kept under the lock.
    private struct SegmentBox: @unchecked Sendable { var value = GstSegment() }

    private let key: Key
    private let state = Lock(State())
    private nonisolated(unsafe) let reference = gst_caps_new_empty_simple("timestamp/x-moq-publisher")!
    /// Frames recorded at most (a run of 10 s at 30 fps needs 300).
    static let capacity = 20_000

    init(key: Key) { self.key = key }

    deinit { gst_caps_unref(reference) }

    /// When the frame with publisher timestamp `us` passed (monotonic ns).
    func time(of us: UInt64) -> UInt64? { state.withLock { $0.times[us] } }

    /// The running time of that frame here (from its PTS and segment: the player's render deadline).
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
            pad, GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue),
            { _, info, data in
                guard let data, let info, let object = info.pointee.data else { return GST_PAD_PROBE_OK }
                let probe = Unmanaged<StageProbe>.fromOpaque(data).takeUnretainedValue()
                if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0 {
                    probe.observe(object.assumingMemoryBound(to: GstBuffer.self))
                } else {
                    probe.observe(event: object.assumingMemoryBound(to: GstEvent.self))
                }
                return GST_PAD_PROBE_OK
            }, context, { data in Unmanaged<StageProbe>.fromOpaque(data!).release() })
    }

    private func observe(event: UnsafeMutablePointer<GstEvent>) {
        guard swiftmoq_event_type(event) == GST_EVENT_SEGMENT else { return }
        var segment = GstSegment()
        gst_event_copy_segment(event, &segment)
        let box = SegmentBox(value: segment)
        state.withLock {
            $0.segment = box
            $0.hasSegment = box.value.format == GST_FORMAT_TIME
        }
    }

    private func observe(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let now = Monotonic.now()
        let pts = swiftmoq_buffer_pts(buffer)
        let us: UInt64
        switch key {
        case .runningTime:
            guard swiftmoq_clock_time_is_valid(pts) != 0 else { return }
            let running = state.withLock { s -> GstClockTime? in
                guard s.hasSegment else { return nil }
                return gst_segment_to_running_time(&s.segment.value, GST_FORMAT_TIME, pts)
            }
            guard let running, swiftmoq_clock_time_is_valid(running) != 0 else { return }
            us = UInt64(running) / 1000
        case .publisherMeta:
            guard let meta = gst_buffer_get_reference_timestamp_meta(buffer, reference) else { return }
            us = UInt64(meta.pointee.timestamp) / 1000
        }
        state.withLock { s in
            guard s.times[us] == nil, s.times.count < Self.capacity else { return }
            s.times[us] = now
            guard swiftmoq_clock_time_is_valid(pts) != 0, s.hasSegment else { return }
            let running = gst_segment_to_running_time(&s.segment.value, GST_FORMAT_TIME, pts)
            if swiftmoq_clock_time_is_valid(running) != 0 { s.ptsByKey[us] = UInt64(running) }
        }
    }
}

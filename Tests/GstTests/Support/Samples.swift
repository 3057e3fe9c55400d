// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Foundation
import MoqSync
import Synchronization

/// A buffer seen by a test: its timestamps, flags, size and a hash of its bytes.
struct SeenBuffer: Sendable {
    var pts: UInt64?
    var flags: UInt32
    var size: Int
    var hash: UInt64
    /// The publisher's timestamp moqsrc attaches (`timestamp/x-moq-publisher` reference meta), ns.
    var publisherTime: UInt64? = nil
    /// The buffer's duration, when it has one (ns).
    var duration: UInt64? = nil
    /// The bytes of a small buffer (≤ 256: text, data), nil for larger ones.
    var bytes: [UInt8]? = nil

    var isDelta: Bool { flags & GST_BUFFER_FLAG_DELTA_UNIT.rawValue != 0 }
}

/// FNV-1a over a buffer's bytes (to match the same payload on both sides of a relay).
func contentHash(_ buffer: UnsafeMutablePointer<GstBuffer>) -> (UInt64, Int) {
    var map = GstMapInfo()
    guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return (0, 0) }
    defer { gst_buffer_unmap(buffer, &map) }
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for i in 0..<Int(map.size) {
        h = (h ^ UInt64(map.data[i])) &* 0x100_0000_01b3
    }
    return (h, Int(map.size))
}

func seen(_ buffer: UnsafeMutablePointer<GstBuffer>) -> SeenBuffer {
    let pts = swiftmoq_buffer_pts(buffer)
    let (hash, size) = contentHash(buffer)
    var entry = SeenBuffer(
        pts: swiftmoq_clock_time_is_valid(pts) != 0 ? UInt64(pts) : nil, flags: buffer.pointee.mini_object.flags,
        size: size, hash: hash)
    let reference = gst_caps_new_empty_simple("timestamp/x-moq-publisher")
    defer { gst_caps_unref(reference) }
    if let meta = gst_buffer_get_reference_timestamp_meta(buffer, reference) {
        entry.publisherTime = UInt64(meta.pointee.timestamp)
    }
    let duration = swiftmoq_buffer_duration(buffer)
    if swiftmoq_clock_time_is_valid(duration) != 0 { entry.duration = UInt64(duration) }
    if size <= 256 {
        var map = GstMapInfo()
        if gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 {
            entry.bytes = Array(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
            gst_buffer_unmap(buffer, &map)
        }
    }
    return entry
}

/// Pulls every sample of an appsink on a thread of its own until stopped.
final class AppSinkCollector: @unchecked Sendable {
    private let sink: UnsafeMutablePointer<GstElement>
    private let buffers = SeenStore()
    private let flag = StopFlag()
    private let thread: Thread

    /// Starts pulling from `sink` (a reference is kept until ``stop()``).
    init(_ sink: UnsafeMutablePointer<GstElement>) {
        self.sink = sink
        gst_object_ref(sink)
        let appsink = UncheckedPointer(UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self))
        let store = buffers
        let flag = self.flag
        thread = Thread {
            while !flag.isSet {
                guard let sample = gst_app_sink_try_pull_sample(appsink.pointer, 50_000_000) else { continue }
                if let buffer = gst_sample_get_buffer(sample) {
                    let entry = seen(buffer)
                    store.append(entry)
                }
                gst_sample_unref(sample)
            }
        }
        thread.start()
    }

    var all: [SeenBuffer] { buffers.all }
    var count: Int { buffers.all.count }

    func stop() {
        flag.set()
        while !thread.isFinished { usleep(10_000) }
        gst_object_unref(sink)
    }
}

/// Records the buffers flowing through a pad (a probe), for matching against what a
/// subscriber received.
final class PadRecorder: @unchecked Sendable {
    private let buffers = Lock<[SeenBuffer]>([])
    private let pad: UnsafeMutablePointer<GstPad>
    private var probe: gulong = 0

    init(_ element: UnsafeMutablePointer<GstElement>, pad name: String = "src") {
        pad = gst_element_get_static_pad(element, name)!
        probe = gst_pad_add_probe(
            pad, GST_PAD_PROBE_TYPE_BUFFER,
            { _, info, data in
                let recorder = Unmanaged<PadRecorder>.fromOpaque(data!).takeUnretainedValue()
                if let buffer = info?.pointee.data {
                    var entry = seen(buffer.assumingMemoryBound(to: GstBuffer.self))
                    entry.pts = entry.pts.flatMap { recorder.runningTime($0) }
                    recorder.buffers.withLock { $0.append(entry) }
                }
                return GST_PAD_PROBE_OK
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    /// Recorded timestamps are running time (encoders may shift their segment, e.g. by 1000 h).
    var all: [SeenBuffer] { buffers.withLock { $0 } }

    fileprivate func runningTime(_ pts: UInt64) -> UInt64? {
        guard let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) else { return nil }
        defer { gst_event_unref(event) }
        var segment: UnsafePointer<GstSegment>?
        gst_event_parse_segment(event, &segment)
        guard let segment else { return nil }
        let time = gst_segment_to_running_time(segment, GST_FORMAT_TIME, GstClockTime(pts))
        return swiftmoq_clock_time_is_valid(time) != 0 ? UInt64(time) : nil
    }

    func stop() {
        gst_pad_remove_probe(pad, probe)
        gst_object_unref(pad)
    }
}

/// A flag a thread polls.
final class StopFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// A C pointer handed to a thread (GStreamer objects are thread-safe).
struct UncheckedPointer<T>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<T>
    init(_ pointer: UnsafeMutablePointer<T>) { self.pointer = pointer }
}

/// Buffers seen, shared with a thread.
final class SeenStore: Sendable {
    private let buffers = Lock<[SeenBuffer]>([])
    func append(_ entry: SeenBuffer) { buffers.withLock { $0.append(entry) } }
    var all: [SeenBuffer] { buffers.withLock { $0 } }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import Dispatch
import FoundationEssentials
import Glibc
import MoqPipeline
import Synchronization

/// Pulls decoded samples from an appsink on a thread of its own and hands them to an app callback.
final class FrameTap: Sendable {
    private let stopped = StopFlag()
    private let finished = DispatchSemaphore(value: 0)

    init(_ handle: ElementHandle, deliver: @escaping @Sendable (OpaquePointer) -> Void) {
        let sink = UncheckedSink(handle)
        let stopped = self.stopped
        let finished = self.finished
        Thread.start {
            defer { finished.signal() }
            let appsink = UnsafeMutableRawPointer(sink.handle.object.pointer).assumingMemoryBound(to: GstAppSink.self)
            while !stopped.isSet {
                guard let sample = gst_app_sink_try_pull_sample(appsink, 100_000_000) else {
                    if gst_app_sink_is_eos(appsink) != 0 { break }
                    continue
                }
                deliver(sample)
                gst_sample_unref(sample)
            }
        }
    }

    func stop() { stopped.set() }

    /// Waits (at most `timeoutMs`) for the reader to have delivered everything up to the sink's
    /// EOS, then stops it.
    func drain(timeoutMs: Int) {
        _ = finished.wait(timeout: .now() + .milliseconds(timeoutMs))
        stop()
    }

    /// Static helpers to read a sample.
    static func bytes(_ sample: OpaquePointer) -> (Data, Duration?) {
        guard let buffer = gst_sample_get_buffer(sample) else { return (Data(), nil) }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return (Data(), nil) }
        defer { gst_buffer_unmap(buffer, &map) }
        // The running time (moqsrc's PTS are offset, as encoders' are; the segment says how).
        var time = swiftmoq_buffer_pts(buffer)
        if swiftmoq_clock_time_is_valid(time) != 0, let segment = gst_sample_get_segment(sample) {
            time = gst_segment_to_running_time(segment, GST_FORMAT_TIME, time)
        }
        return (
            Data(bytes: map.data, count: Int(map.size)),
            swiftmoq_clock_time_is_valid(time) != 0 ? .nanoseconds(Int64(clamping: UInt64(time))) : nil
        )
    }

    /// The publisher's timestamp that moqsrc attached (`timestamp/x-moq-publisher`), if a
    /// decoder and the converters kept it.
    static func publisherTime(_ sample: OpaquePointer) -> Duration? {
        guard let buffer = gst_sample_get_buffer(sample),
            let meta = gst_buffer_get_reference_timestamp_meta(buffer, publisherTimeCaps)
        else { return nil }
        let ns = meta.pointee.timestamp
        return swiftmoq_clock_time_is_valid(ns) != 0 ? .nanoseconds(Int64(clamping: ns)) : nil
    }

    nonisolated(unsafe) private static let publisherTimeCaps: UnsafeMutablePointer<GstCaps> =
        gst_caps_new_empty_simple("timestamp/x-moq-publisher")

    static func intField(_ sample: OpaquePointer, _ name: String) -> Int {
        guard let caps = gst_sample_get_caps(sample), let s = gst_caps_get_structure(caps, 0) else { return 0 }
        var value: gint = 0
        return gst_structure_get_int(s, name, &value) != 0 ? Int(value) : 0
    }
}

/// A flag the pulling thread polls.
private final class StopFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// An element handle handed to the pulling thread.
private struct UncheckedSink: Sendable {
    let handle: ElementHandle
    init(_ handle: ElementHandle) { self.handle = handle }
}

/// A detached pthread (no Foundation Thread in the essentials).
private enum Thread {
    static func start(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        pthread_detach(thread)
    }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

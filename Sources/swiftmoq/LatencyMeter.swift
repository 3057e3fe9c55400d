// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqPipeline

/// Publish-to-render latency within one process: moqsink's input is stamped (its running time in
/// µs is the frame timestamp), and each rendered buffer's `timestamp/x-moq-publisher` meta (set by
/// moqsrc, kept by decoders) finds that stamp. Both ends read the same system clock.
final class LatencyMeter: @unchecked Sendable {
    private let lock = NSLock()
    private var published: [UInt64: UInt64] = [:]
    private var samples: [UInt64] = []
    private var probes: [(UnsafeMutablePointer<GstPad>, gulong)] = []
    private let reference = gst_caps_new_empty_simple("timestamp/x-moq-publisher")!

    deinit {
        for (pad, id) in probes {
            gst_pad_remove_probe(pad, id)
            gst_object_unref(pad)
        }
        gst_caps_unref(reference)
    }

    static func now() -> UInt64 {
        let clock = gst_system_clock_obtain()!
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        return UInt64(gst_clock_get_time(clock))
    }

    /// Stamps buffers entering `element`'s `pad` (moqsink's `sink_0`).
    func attachPublisher(_ element: ElementHandle, pad: String) {
        attach(element, pad: pad) { meter, pad, buffer in
            let pts = swiftmoq_buffer_pts(buffer)
            guard swiftmoq_clock_time_is_valid(pts) != 0,
                let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0)
            else { return }
            defer { gst_event_unref(event) }
            var segment: UnsafePointer<GstSegment>?
            gst_event_parse_segment(event, &segment)
            guard let segment else { return }
            let running = gst_segment_to_running_time(segment, GST_FORMAT_TIME, pts)
            guard swiftmoq_clock_time_is_valid(running) != 0 else { return }
            let now = LatencyMeter.now()
            meter.lock.withLock {
                meter.published[UInt64(running) / 1000] = now
                if meter.published.count > 10_000 { meter.published.removeAll(keepingCapacity: true) }
            }
        }
    }

    /// Measures buffers reaching `element`'s `pad` (the player's video sink).
    func attachPlayer(_ element: ElementHandle, pad: String) {
        attach(element, pad: pad) { meter, _, buffer in
            guard let meta = gst_buffer_get_reference_timestamp_meta(buffer, meter.reference) else { return }
            let key = UInt64(meta.pointee.timestamp) / 1000
            let now = LatencyMeter.now()
            meter.lock.withLock {
                if let sent = meter.published[key], now > sent { meter.samples.append(now - sent) }
            }
        }
    }

    /// p50 and p99 of the samples since the last call, in ms, and how many there were.
    func drain() -> (p50: Double, p99: Double, count: Int)? {
        let taken = lock.withLock { () -> [UInt64] in
            defer { samples.removeAll(keepingCapacity: true) }
            return samples
        }
        guard !taken.isEmpty else { return nil }
        let sorted = taken.sorted()
        func at(_ q: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1e6 }
        return (at(0.5), at(0.99), sorted.count)
    }

    private typealias Visit = (LatencyMeter, UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstBuffer>) -> Void

    private final class Context {
        unowned let meter: LatencyMeter
        let visit: Visit
        init(_ meter: LatencyMeter, _ visit: @escaping Visit) {
            self.meter = meter
            self.visit = visit
        }
    }

    private func attach(_ element: ElementHandle, pad name: String, _ visit: @escaping Visit) {
        guard let pad = gst_element_get_static_pad(element.object.pointer, name) else { return }
        let context = Unmanaged.passRetained(Context(self, visit)).toOpaque()
        let id = gst_pad_add_probe(
            pad, GST_PAD_PROBE_TYPE_BUFFER,
            { pad, info, data in
                let context = Unmanaged<Context>.fromOpaque(data!).takeUnretainedValue()
                if let pad, let buffer = info?.pointee.data {
                    context.visit(context.meter, pad, buffer.assumingMemoryBound(to: GstBuffer.self))
                }
                return GST_PAD_PROBE_OK
            }, context, { data in Unmanaged<Context>.fromOpaque(data!).release() })
        lock.withLock { probes.append((pad, id)) }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPipeline
import MoqSync

/// Times buffers reaching a pad against the publisher's clock: `moqsrc` puts the publisher's running
/// time (moqsink's input) on each buffer as a `GstReferenceTimestampMeta` with reference caps
/// `timestamp/x-moq-publisher`; with the publisher pipeline's base time on `CLOCK_MONOTONIC`, the publish
/// instant is `base + meta`, and the latency is now minus that (both processes read the same clock).
final class PublisherTimeProbe: Sendable {
    private struct State {
        var measuring = false
        var frames = 0
        var latenciesMicros: [Int] = []
        var firstArrival: UInt64?
    }

    private let publisherBase: UInt64
    private let state = Lock(State())
    // An immutable caps object, only read after init (`@unchecked`: GstCaps is refcounted, never written here).
    private nonisolated(unsafe) let reference = gst_caps_new_empty_simple("timestamp/x-moq-publisher")!

    /// A probe for a publisher whose pipeline base time is `publisherBase` (ns, `CLOCK_MONOTONIC`).
    init(publisherBase: UInt64) { self.publisherBase = publisherBase }

    deinit { gst_caps_unref(reference) }

    /// Buffers seen so far, measured or not.
    var frames: Int { state.withLock { $0.frames } }

    /// Starts recording latencies (buffers before this only count).
    func startMeasuring() { state.withLock { $0.measuring = true } }

    /// Latencies recorded since ``startMeasuring()``, in µs.
    var latenciesMicros: [Int] { state.withLock { $0.latenciesMicros } }

    /// Probes `pad` of `element` (the appsink's `sink`).
    func attach(to element: ElementHandle, pad name: String) throws(BenchError) {
        guard let pad = gst_element_get_static_pad(element.object.pointer, name) else {
            throw .runtime("\(element.name) has no pad \(name)")
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(pad)) }
        let context = Unmanaged.passRetained(self).toOpaque()
        gst_pad_add_probe(
            pad, GST_PAD_PROBE_TYPE_BUFFER,
            { _, info, data in
                guard let data, let buffer = info?.pointee.data else { return GST_PAD_PROBE_OK }
                let probe = Unmanaged<PublisherTimeProbe>.fromOpaque(data).takeUnretainedValue()
                probe.observe(buffer.assumingMemoryBound(to: GstBuffer.self))
                return GST_PAD_PROBE_OK
            }, context, { data in Unmanaged<PublisherTimeProbe>.fromOpaque(data!).release() })
    }

    private func observe(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let now = Monotonic.now()
        guard let meta = gst_buffer_get_reference_timestamp_meta(buffer, reference) else { return }
        let published = publisherBase + UInt64(meta.pointee.timestamp)
        state.withLock { s in
            s.frames += 1
            if s.firstArrival == nil { s.firstArrival = now }
            if s.measuring { s.latenciesMicros.append(now > published ? Int((now - published) / 1000) : 0) }
        }
    }
}

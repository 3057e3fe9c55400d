// SPDX-License-Identifier: MIT
import CGStreamer
import Glibc
import GstSupport
import MoqSync
import Synchronization

/// Reads one pipeline's bus on a thread of its own (`gst_bus_timed_pop`) and hands every message to a
/// ``MessageHub``; LATENCY messages also make the pipeline recalculate its latency, as gst-launch does.
///
/// ``stop()`` posts a marker message and joins the thread, so every message posted before the call has
/// reached the hub when it returns.
final class BusReader: Sendable {
    private static let stopMarker = "swiftmoq-moqpipeline-bus-reader-stop"

    private let bus: ObjectRef<GstBus>
    private let pipeline: ObjectRef<GstElement>
    private let hub: MessageHub
    private let stopping = Atomic(false)
    private let thread = Lock<pthread_t?>(nil)

    /// Starts reading `pipeline`'s bus.
    init(pipeline: ObjectRef<GstElement>, hub: MessageHub) throws(PipelineError) {
        guard let bus = gst_element_get_bus(pipeline.pointer) else {
            throw .stateChange("the pipeline has no bus")
        }
        self.bus = ObjectRef(owning: bus)
        self.pipeline = pipeline
        self.hub = hub
        let box = Unmanaged.passRetained(self).toOpaque()
        var tid = pthread_t()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let reader = Unmanaged<BusReader>.fromOpaque(arg!).takeRetainedValue()
                reader.run()
                return nil
            }, box)
        if rc != 0 {
            Unmanaged<BusReader>.fromOpaque(box).release()
            throw .stateChange("cannot start the bus thread (pthread_create: \(rc))")
        }
        thread.withLock { $0 = tid }
    }

    private func run() {
        let poll: GstClockTime = 100_000_000  // 100 ms: only bounds how long a lost stop marker delays stop()
        while !stopping.load(ordering: .acquiring) {
            guard let m = gst_bus_timed_pop(bus.pointer, poll) else { continue }
            defer { gst_message_unref(m) }
            if swiftmoq_message_type(m) == GST_MESSAGE_APPLICATION, let s = gst_message_get_structure(m),
                gst_structure_has_name(s, Self.stopMarker) != 0
            {
                return
            }
            if swiftmoq_message_type(m) == GST_MESSAGE_LATENCY {
                _ = gst_bin_recalculate_latency(
                    UnsafeMutableRawPointer(pipeline.pointer).assumingMemoryBound(to: GstBin.self))
            }
            hub.post(BusMessage(m))
        }
    }

    /// Delivers what is already on the bus, then ends the thread. Idempotent; must not be called on the
    /// bus thread.
    func stop() {
        guard
            let tid = thread.withLock({ t -> pthread_t? in
                defer { t = nil }
                return t
            })
        else { return }
        let marker = gst_message_new_application(nil, gst_structure_new_empty(Self.stopMarker))
        if gst_bus_post(bus.pointer, marker) == 0 {
            // A flushing bus drops messages: fall back to the flag.
            stopping.store(true, ordering: .releasing)
        }
        pthread_join(tid, nil)
    }
}

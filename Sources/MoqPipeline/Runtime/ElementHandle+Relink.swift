// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch

/// Swaps what follows `upstream`'s src pad for a new sink bin while data flows: the new bin is
/// added and brought to the pipeline's state first, then an IDLE probe relinks between two
/// buffers, then the old chain gets EOS (a sink renders what it holds, an appsink's reader can
/// take what is queued) and is shut down. No flush, no reconnect: the next buffer goes to the new
/// sink, and nothing the old one had is dropped.
extension ElementHandle {
    /// Replaces everything linked after this element's `src` pad (a chain down to a sink) by the
    /// sink described by `description` (gst-launch syntax; a bin with a ghost sink pad), while
    /// data flows. Returns once the new sink is linked and the old chain is shut down.
    /// - Parameter beforeShutdown: runs after the old chain has taken EOS and before it is shut
    ///   down (an appsink's reader drains it: what is queued there is lost at NULL).
    /// - Throws: ``PipelineError/parse(_:)`` for a description GStreamer refuses;
    ///   ``PipelineError/failed(_:)`` when this element has no src pad or is in no pipeline.
    public func replaceDownstream(
        with description: String, beforeShutdown: () -> Void = {}
    ) throws(PipelineError) {
        let upstream = object.pointer
        guard let srcPad = gst_element_get_static_pad(upstream, "src") else { throw .failed("\(name) has no src pad") }
        defer { gst_object_unref(srcPad) }
        var error: UnsafeMutablePointer<GError>?
        guard let bin = gst_parse_bin_from_description(description, 1, &error) else {
            let text = error.map { String(cString: $0.pointee.message) } ?? description
            if let error { g_error_free(error) }
            throw .parse(text)
        }
        guard
            let parent = gst_object_get_parent(
                UnsafeMutableRawPointer(upstream).assumingMemoryBound(to: GstObject.self))
        else {
            gst_object_unref(bin)
            throw .failed("\(name) is in no pipeline")
        }
        let pipeline = UnsafeMutableRawPointer(parent).assumingMemoryBound(to: GstBin.self)
        defer { gst_object_unref(parent) }
        // The old chain: from the current peer down to the sink.
        var old: [UnsafeMutablePointer<GstElement>] = []
        if let peer = gst_pad_get_peer(srcPad) {
            var next: UnsafeMutablePointer<GstElement>? = gst_pad_get_parent_element(peer)
            gst_object_unref(peer)
            while let element = next {
                old.append(element)  // one reference each, released below
                next = nil
                if let pad = gst_element_get_static_pad(element, "src") {
                    if let downstream = gst_pad_get_peer(pad) {
                        next = gst_pad_get_parent_element(downstream)
                        gst_object_unref(downstream)
                    }
                    gst_object_unref(pad)
                }
            }
        }
        let binElement = UnsafeMutableRawPointer(bin).assumingMemoryBound(to: GstElement.self)
        gst_bin_add(pipeline, binElement)
        _ = gst_element_sync_state_with_parent(binElement)
        let context = Relink(src: srcPad, newSink: gst_element_get_static_pad(binElement, "sink"))
        let box = Unmanaged.passRetained(context).toOpaque()
        _ = gst_pad_add_probe(
            srcPad, GST_PAD_PROBE_TYPE_IDLE,
            { _, _, data in
                Unmanaged<Relink>.fromOpaque(data!).takeUnretainedValue().run()
                return GST_PAD_PROBE_REMOVE
            }, box, { data in Unmanaged<Relink>.fromOpaque(data!).release() })
        context.done.wait()
        // The old chain is unlinked: EOS into its head renders what it holds (no queue in a sink
        // chain, so this returns once the sink has it).
        if let head = old.first, let sinkPad = gst_element_get_static_pad(head, "sink") {
            _ = gst_pad_send_event(sinkPad, gst_event_new_eos())
            gst_object_unref(sinkPad)
        }
        beforeShutdown()
        for element in old {
            _ = gst_element_set_state(element, GST_STATE_NULL)
            _ = gst_bin_remove(pipeline, element)
            gst_object_unref(element)
        }
    }

}

/// Runs once, in the IDLE probe: between two buffers on the pad.
private final class Relink: @unchecked Sendable {
    let src: UnsafeMutablePointer<GstPad>
    let newSink: UnsafeMutablePointer<GstPad>?
    let done = DispatchSemaphore(value: 0)
    init(src: UnsafeMutablePointer<GstPad>, newSink: UnsafeMutablePointer<GstPad>?) {
        self.src = src
        self.newSink = newSink
        gst_object_ref(src)
    }
    deinit {
        gst_object_unref(src)
        if let newSink { gst_object_unref(newSink) }
    }
    func run() {
        if let peer = gst_pad_get_peer(src) {
            _ = gst_pad_unlink(src, peer)
            gst_object_unref(peer)
        }
        if let newSink { _ = gst_pad_link(src, newSink) }
        done.signal()
    }
}

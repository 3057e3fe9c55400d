// SPDX-License-Identifier: MIT
import CGStreamer
import Synchronization

extension MoqSrc {
    /// Whether a join may place frames on running time now: the top-level pipeline has reached
    /// PLAYING with nothing pending (every sink prerolled, on the pads' GAPs or a first buffer, and
    /// the base time is final), or none of its sinks renders on the clock (a recording into
    /// `filesink`, whose muxer may not produce anything before every track sends data).
    ///
    /// A live pipeline whose sinks are still prerolling is PAUSED with PLAYING pending, and sets a
    /// new base time when it gets there: running time starts again from 0, and a buffer that
    /// already reached a sink waits there until then, so audio due meanwhile is dropped as late.
    /// Once true it stays true until the next start; the check (a walk to the top-level bin, and
    /// over its sinks while it is not PLAYING) is made only while a join waits for it.
    func pipelinePlays() -> Bool {
        if pipelinePlaying.load(ordering: .relaxed) { return true }
        guard var top = gst_object_ref(element).map({ $0.assumingMemoryBound(to: GstObject.self) }) else {
            return false
        }
        while let parent = gst_object_get_parent(top) {
            gst_object_unref(top)
            top = parent
        }
        defer { gst_object_unref(top) }
        let pipeline = UnsafeMutableRawPointer(top).assumingMemoryBound(to: GstElement.self)
        var state = GST_STATE_VOID_PENDING
        var pending = GST_STATE_VOID_PENDING
        let result = gst_element_get_state(pipeline, &state, &pending, 0)
        var plays = result == GST_STATE_CHANGE_SUCCESS && state == GST_STATE_PLAYING
        if !plays,
            g_type_check_instance_is_a(
                UnsafeMutableRawPointer(top).assumingMemoryBound(to: GTypeInstance.self), gst_bin_get_type()) != 0
        {
            plays =
                swiftmoq_bin_has_syncing_sink(UnsafeMutableRawPointer(top).assumingMemoryBound(to: GstBin.self)) == 0
        }
        if plays { pipelinePlaying.store(true, ordering: .relaxed) }
        return plays
    }
}

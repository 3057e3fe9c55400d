// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

/// A pad's sticky events: stream-start (with its stream and the element's collection), caps and
/// segment, each pushed when it changes. Streaming thread only.
///
/// Buffer timestamps are running time plus ``ptsOffsetNs`` (1000 hours, as encoders shift theirs),
/// with segments that start there: a join's decode-only frames from before running time 0 still
/// have a timestamp, and sit before the segment that clips them.
struct StreamEvents {
    /// What buffer PTS add to running time.
    static let ptsOffsetNs: UInt64 = 1000 * 3600 * 1_000_000_000

    /// The PTS of a buffer at running time `runningNs` (which a decode-only frame may have negative).
    static func pts(running runningNs: Int64) -> GstClockTime {
        let value = Int64(clamping: ptsOffsetNs) &+ runningNs
        return GstClockTime(value < 0 ? 0 : UInt64(value))
    }

    /// A TIME segment on which buffer PTS minus ``ptsOffsetNs`` is running time, starting at
    /// running time `startNs`.
    static func segment(startingAt startNs: UInt64 = 0) -> GstSegment {
        var segment = GstSegment()
        gst_segment_init(&segment, GST_FORMAT_TIME)
        segment.start = guint64(ptsOffsetNs + startNs)
        segment.time = guint64(startNs)
        segment.base = guint64(startNs)
        segment.position = segment.start
        return segment
    }

    private var streamID: String?
    private var capsString: String?
    private var needsSegment = true
    /// The seqnum of the seek the next segment answers.
    private var segmentSeqnum: UInt32?

    /// stream-start (when `id` is new), caps (when they changed) and a segment (when one is due)
    /// for a rendition. Takes `stream`'s reference.
    mutating func start(
        pad: UnsafeMutablePointer<GstPad>, src: MoqSrc, id: String, stream: UnsafeMutablePointer<GstStream>?,
        caps: UnsafeMutablePointer<GstCaps>
    ) {
        defer { if let stream { gst_object_unref(stream) } }
        if streamID != id {
            streamID = id
            let start = gst_event_new_stream_start(gst_pad_create_stream_id(pad, src.element, id))!
            gst_event_set_group_id(start, src.groupID)
            if let stream { gst_event_set_stream(start, stream) }
            gst_pad_push_event(pad, start)
            if let collection = src.collection() {
                gst_pad_push_event(pad, gst_event_new_stream_collection(collection))
                gst_object_unref(collection)
            }
            capsString = nil
            needsSegment = true
        }
        let text = GstSupport.capsString(caps)
        if capsString != text {
            capsString = text
            gst_pad_push_event(pad, gst_event_new_caps(caps))
        }
        if needsSegment {
            var segment = Self.segment()
            let event = gst_event_new_segment(&segment)!
            if let seqnum = segmentSeqnum { gst_event_set_seqnum(event, seqnum) }
            gst_pad_push_event(pad, event)
            needsSegment = false
            segmentSeqnum = nil
        }
    }

    /// New caps for the same stream (another rendition of one picture), when they changed.
    mutating func renegotiate(pad: UnsafeMutablePointer<GstPad>, caps: UnsafeMutablePointer<GstCaps>) {
        let text = GstSupport.capsString(caps)
        guard capsString != text else { return }
        capsString = text
        gst_pad_push_event(pad, gst_event_new_caps(caps))
    }

    /// A flush removed the segment: the next ``start(pad:src:id:stream:caps:)`` pushes one,
    /// carrying the seek's seqnum.
    mutating func flushed(seqnum: UInt32) {
        needsSegment = true
        segmentSeqnum = seqnum
    }

    /// A segment whose start clips what comes before `startNs` (running time, which buffer
    /// timestamps are): decoders decode and drop it, sinks show nothing of it (a join at the live
    /// edge). Running time stays the PTS: base and time are the start too.
    static func pushClip(pad: UnsafeMutablePointer<GstPad>, startNs: Int64) {
        var segment = segment(startingAt: startNs < 0 ? 0 : UInt64(startNs))
        gst_pad_push_event(pad, gst_event_new_segment(&segment))
    }

    /// A GAP of no duration at running time 0 (in the segment, unlike a join's decode-only
    /// frames): a decoder that has no output yet negotiates it, and the sink prerolls on it, so
    /// the pipeline can reach PLAYING before a join places its first frame.
    static func pushPrerollGap(pad: UnsafeMutablePointer<GstPad>) {
        gst_pad_push_event(pad, gst_event_new_gap(pts(running: 0), 0))
    }
}

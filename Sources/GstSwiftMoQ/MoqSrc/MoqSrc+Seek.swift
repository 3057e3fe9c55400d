// SPDX-License-Identifier: MIT
import CGStreamer
import MoqMedia

/// Seeking within the long-form buffer.
///
/// Positions are the publisher's timestamps (the `timestamp/x-moq-publisher` reference meta on
/// every buffer), in a TIME seek:
/// - `GST_SEEK_TYPE_SET`: play from that publisher time;
/// - `GST_SEEK_TYPE_END`: relative to the live edge (the newest frame received), so `-5 s` plays
///   five seconds behind it and `0` at it.
///
/// The target is moved back to the start of the video group that holds it (a keyframe) and
/// clamped to what is cached (the deep buffer); audio starts at that same time. The seek always
/// flushes; the first frame is rendered about ``SrcPad/seekMarginNs`` later. Live playback keeps
/// no buffer to seek in and refuses.
extension MoqSrc {
    func seek(_ event: UnsafeMutablePointer<GstEvent>) -> Bool {
        guard longFormBufferMs != nil else {
            reporter.log(GST_LEVEL_DEBUG, "seek refused: a live stream (buffering=live) has no buffer to seek in")
            return false
        }
        var rate: gdouble = 0
        var format = GST_FORMAT_UNDEFINED
        var flags = GstSeekFlags(rawValue: 0)
        var startType = GST_SEEK_TYPE_NONE
        var stopType = GST_SEEK_TYPE_NONE
        var start: gint64 = 0
        var stop: gint64 = 0
        gst_event_parse_seek(event, &rate, &format, &flags, &startType, &start, &stopType, &stop)
        guard format == GST_FORMAT_TIME, rate == 1.0 else {
            reporter.log(GST_LEVEL_WARNING, "seek refused: only TIME seeks at rate 1.0 (got rate \(rate))")
            return false
        }
        let seqnum = gst_event_get_seqnum(event)
        // A pipeline seek reaches this element once per sink: the same seqnum is one seek.
        if !recordSeek(seqnum) { return true }
        let pads = run?.pads.values.map { $0 } ?? []
        guard let edge = pads.compactMap(\.liveEdgeUs).max() else {
            reporter.log(GST_LEVEL_WARNING, "seek refused: nothing buffered yet")
            return false
        }
        let targetUs: UInt64
        switch startType {
        case GST_SEEK_TYPE_SET:
            targetUs = UInt64(max(0, start)) / 1000
        case GST_SEEK_TYPE_END:
            let behind = start < 0 ? UInt64(start.magnitude) / 1000 : 0
            targetUs = edge > behind ? edge - behind : 0
        default:
            reporter.log(GST_LEVEL_WARNING, "seek refused: give a start position (SET or END)")
            return false
        }
        // Video starts at a keyframe: the group holding the target; audio starts there too.
        let video = pads.first { $0.kind == .video }
        let snapped = (video ?? pads.first)?.groupStart(atOrBefore: targetUs) ?? targetUs
        let request = SrcPad.SeekRequest(id: UInt64(seqnum), targetUs: snapped, seqnum: seqnum)
        for pad in pads { pad.seek(request) }
        events.post(
            "seek",
            [
                ("target-us", .uint64(targetUs)), ("position-us", .uint64(snapped)),
                ("behind-live-edge-ms", .double(Double(edge > snapped ? edge - snapped : 0) / 1000)),
            ])
        return true
    }
}

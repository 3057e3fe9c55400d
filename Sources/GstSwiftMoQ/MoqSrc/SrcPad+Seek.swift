// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback

/// Seeking within the long-form buffer, on the pad's thread.
extension SrcPad {
    /// A seek within the long-form buffer, handled on the pad's thread (``performSeek(_:reader:source:now:src:)``).
    struct SeekRequest: Sendable {
        /// The seek event's seqnum: every pad handles the same seek once.
        let id: UInt64
        /// Where to play from (publisher µs): the start of a video group, so that both pads
        /// begin together and video at a keyframe.
        let targetUs: UInt64
        let seqnum: UInt32
    }

    /// How long after a seek its first frame is rendered: time to decode it.
    static let seekMarginNs: UInt64 = 30_000_000

    /// Plays from `request.targetUs` at once: downstream is flushed, the reader moves to the
    /// cached group holding the target, and the shared timeline puts the target right after now.
    func seek(_ request: SeekRequest) {
        seekPending.store(true, ordering: .releasing)
        post { $0.seek = request }
    }

    /// Flushes downstream, moves the reader and (first pad to get here) the shared timeline.
    func performSeek(_ request: SeekRequest, reader: TrackReader, source: Source, now: UInt64, src: MoqSrc) {
        let start = gst_event_new_flush_start()!
        gst_event_set_seqnum(start, request.seqnum)
        gst_pad_push_event(pad, start)
        let stop = gst_event_new_flush_stop(0)!
        gst_event_set_seqnum(stop, request.seqnum)
        gst_pad_push_event(pad, stop)
        // Flushing removed the segment (and an EOS): a new one follows.
        stream.flushed(seqnum: request.seqnum)
        eosSent = false
        startStream(source, src: src)
        draining?.remote.cancel()
        draining = nil
        held = nil
        let from = reader.seek(toTimestampUs: request.targetUs, dropEarlier: kind != .video)
        startingAfterSeek = true
        playout.reset(lane, .seek)
        // The target is rendered right after now: its running time is now minus what the sinks
        // wait, plus a margin for decoding.
        let renderDelay = playout.renderDelayNs
        let at = now &+ Self.seekMarginNs > renderDelay ? now &+ Self.seekMarginNs - renderDelay : 0
        let moved = playout.seek(id: request.id, timestampUs: request.targetUs, at: at)
        src.reporter.log(
            GST_LEVEL_INFO,
            "\(name): seek to \(request.targetUs) µs: reading from \(from.map { "\($0) µs" } ?? "nothing cached")"
                + (moved ? " (timeline moved)" : ""))
    }
}

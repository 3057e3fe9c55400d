// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback
import MoqSync
import SwiftMoQ

/// What moqsrc's pads for a track beside the media share (``DataPad``'s `data_%u` and
/// ``CaptionPad``'s `text_0`): the subscription on the current session and broadcast (replaced
/// after a reconnect or on the next broadcast), a sparse stream (stream-start flagged sparse, fixed
/// caps, a segment on the media's timeline) and a GAP once linked, so that a sink on a silent or
/// missing track lets the pipeline preroll.
class SideTrackPad: PadTask, @unchecked Sendable {
    /// What the pad reads: the track on a session.
    struct Source: @unchecked Sendable {
        let session: MoqSession
        let broadcast: String
        let epoch: UInt64
        let eosOnEnd: Bool

        func same(as other: Source) -> Bool {
            session === other.session && broadcast == other.broadcast && epoch == other.epoch
        }
    }

    let trackName: String
    private let caps: String
    private let raw: Bool
    private let pending = Lock<Source?>(nil)

    // Streaming-thread state.
    private(set) var source: Source?
    private(set) var remote: RemoteTrack?
    private(set) var reader: TrackReader?
    private var started = false
    private var gapSent = false
    /// The next buffer pushed starts a new subscription (DISCONT).
    var discont = true

    /// - Parameters:
    ///   - caps: the pad's fixed caps.
    ///   - raw: frames are handed over as they came (no legacy container decoding).
    init(pad: UnsafeMutablePointer<GstPad>, name: String, trackName: String, caps: String, raw: Bool, src: MoqSrc) {
        self.trackName = trackName
        self.caps = caps
        self.raw = raw
        super.init(pad: pad, name: name, src: src)
    }

    /// Reads `source` from the next iteration on (a new session after a reconnect, a new broadcast).
    final func play(_ source: Source) {
        pending.withLock { $0 = source }
        interrupt()
    }

    override func stopped() { dropSubscription() }

    /// The start of every step: a new source subscribed, and the preroll GAP once linked (not
    /// sticky: gst-launch links the pad after pad-added, which may come after this thread started).
    /// Returns whether the pad may push: a subscription, not at EOS, PLAYING (a live source).
    final func prepareStep(_ src: MoqSrc) -> Bool {
        if let next = pending.withLock({ s -> Source? in
            defer { s = nil }; return s
        }) {
            subscribe(next, src: src)
        }
        if started, !gapSent, gst_pad_is_linked(pad) != 0 {
            gapSent = true
            gst_pad_push_event(pad, gst_event_new_gap(StreamEvents.pts(running: 0), swiftmoq_clock_time_none()))
        }
        return reader != nil && source != nil && !eosSent && src.currentState == GST_STATE_PLAYING
    }

    /// A new subscription replaced the previous one (the subclass forgets what it held).
    func subscribed() {}

    private func subscribe(_ next: Source, src: MoqSrc) {
        if let source, source.same(as: next), reader != nil { return }
        remote?.cancel()
        let remote = next.session.subscribe(
            broadcast: next.broadcast, track: trackName,
            range: SubscriptionPolicy.dataRange(latencyMs: src.latencyMs, longFormBufferMs: src.longFormBufferMs))
        let reader = TrackReader(track: remote.track, maxLatencyMs: nil, raw: raw)
        self.remote = remote
        self.reader = reader
        readerRef.withLock { $0 = reader }
        source = next
        discont = true
        subscribed()
        guard !started else { return }
        started = true
        let id = "\(next.broadcast)/\(trackName)"
        let start = gst_event_new_stream_start(gst_pad_create_stream_id(pad, src.element, id))!
        gst_event_set_group_id(start, src.groupID)
        // Sparse, like subtitles: downstream does not wait for it.
        gst_event_set_stream_flags(start, GST_STREAM_FLAG_SPARSE)
        gst_pad_push_event(pad, start)
        let caps = gst_caps_from_string(caps)!
        gst_pad_push_event(pad, gst_event_new_caps(caps))
        gst_caps_unref(caps)
        var segment = StreamEvents.segment()
        gst_pad_push_event(pad, gst_event_new_segment(&segment))
    }

    /// Ends the subscription (the track ended, failed or the pad stopped).
    final func dropSubscription() {
        remote?.cancel()
        remote = nil
        reader = nil
        readerRef.withLock { $0 = nil }
    }

    /// At the end of the track: EOS when the broadcast ends with it, else wait for the next source.
    final func trackEnded() {
        if source?.eosOnEnd == true {
            eosSent = true
            gst_pad_push_event(pad, gst_event_new_eos())
        } else {
            dropSubscription()
        }
    }
}

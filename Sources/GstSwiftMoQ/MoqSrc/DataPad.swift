// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// One `data_%u` pad of `moqsrc` (`data-tracks`): a named track outside the catalog (chat,
/// telemetry…), one buffer per frame as it came, the mirror of moqsink's data pads.
///
/// Like ``SrcPad``, a ``PadTask`` reads the subscription's cache with a bounded wait and pushes;
/// the network only fills the cache. A buffer's PTS is the frame's timestamp on the broadcast's
/// shared timeline once media has anchored it (moqsink stamps data frames with the running time, as
/// its media), so data lines up with what is shown; before that, and for tracks not in µs, buffers
/// carry no timestamp. The stream is sparse (a GAP follows its segment), so sinks on a silent or
/// missing track do not hold the pipeline in PAUSED.
final class DataPad: PadTask, @unchecked Sendable {
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
    private let pending = Lock<Source?>(nil)
    /// Frames pushed (for the tests and the log).
    let frames = Atomic<UInt64>(0)

    // Streaming-thread state.
    private var source: Source?
    private var remote: RemoteTrack?
    private var reader: TrackReader?
    private var started = false
    private var gapSent = false
    private var discont = true

    init(pad: UnsafeMutablePointer<GstPad>, name: String, trackName: String, src: MoqSrc) {
        self.trackName = trackName
        super.init(pad: pad, name: name, src: src)
    }

    /// Reads `source` from the next iteration on (a new session after a reconnect, a new broadcast).
    func play(_ source: Source) {
        pending.withLock { $0 = source }
        interrupt()
    }

    override func stopped() {
        dropSubscription()
    }

    override func step(_ src: MoqSrc, generation: UInt64) {
        if let next = pending.withLock({ s -> Source? in
            defer { s = nil }; return s
        }) {
            subscribe(next, src: src)
        }
        // A data track may stay silent for long (or not exist): a GAP lets its sink preroll, so the
        // pipeline reaches PLAYING without it (a sink waiting for a first buffer would hold every
        // other branch in PAUSED). Not sticky: it is pushed once the pad is linked (gst-launch
        // links it after pad-added, which may come after this thread started).
        if started, !gapSent, gst_pad_is_linked(pad) != 0 {
            gapSent = true
            gst_pad_push_event(pad, gst_event_new_gap(0, swiftmoq_clock_time_none()))
        }
        // A live source pushes in PLAYING only.
        guard let reader, let source, !eosSent, src.currentState == GST_STATE_PLAYING else {
            wake.wait(since: generation, timeoutNs: 50_000_000)
            return
        }
        switch reader.next(waitingUpTo: 100_000_000) {
        case .idle, .malformed: break
        case .ended:
            if source.eosOnEnd {
                eosSent = true
                gst_pad_push_event(pad, gst_event_new_eos())
            } else {
                dropSubscription()
            }
        case .failed(let error):
            if case .cancelled = error { return }
            src.reporter.log(GST_LEVEL_INFO, "\(name): data track \(trackName) ended: \(error)")
            dropSubscription()
        case .frame(let frame):
            push(frame, src: src)
        }
    }

    private func subscribe(_ next: Source, src: MoqSrc) {
        if let source, source.same(as: next), reader != nil { return }
        remote?.cancel()
        let remote = next.session.subscribe(
            broadcast: next.broadcast, track: trackName,
            range: SubscriptionPolicy.dataRange(latencyMs: src.latencyMs, longFormBufferMs: src.longFormBufferMs))
        let reader = TrackReader(track: remote.track, maxLatencyMs: nil, raw: true)
        self.remote = remote
        self.reader = reader
        readerRef.withLock { $0 = reader }
        source = next
        discont = true
        if !started {
            started = true
            let id = "\(next.broadcast)/\(trackName)"
            let start = gst_event_new_stream_start(gst_pad_create_stream_id(pad, src.element, id))!
            gst_event_set_group_id(start, src.groupID)
            // Sparse, like subtitles: downstream does not wait for it.
            gst_event_set_stream_flags(start, GST_STREAM_FLAG_SPARSE)
            gst_pad_push_event(pad, start)
            let caps = gst_caps_from_string(MoqSrcType.dataCaps)!
            gst_pad_push_event(pad, gst_event_new_caps(caps))
            gst_caps_unref(caps)
            var segment = StreamEvents.segment()
            gst_pad_push_event(pad, gst_event_new_segment(&segment))
        }
    }

    private func dropSubscription() {
        remote?.cancel()
        remote = nil
        reader = nil
        readerRef.withLock { $0 = nil }
    }

    private func push(_ frame: MediaFrame, src: MoqSrc) {
        let bytes = frame.payload
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return }
        if bytes.count > 0 {
            _ = bytes.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize(bytes.count)) }
        }
        if remote?.track.info?.timescale == 1_000_000,
            let pts = src.playout?.runningTime(ofUs: frame.timestampUs, epoch: source?.epoch)
        {
            swiftmoq_buffer_set_pts(buffer, StreamEvents.pts(running: Int64(clamping: pts)))
        }
        if discont {
            swiftmoq_buffer_set_flags(buffer, GST_BUFFER_FLAG_DISCONT.rawValue)
            discont = false
        }
        frames.add(1, ordering: .relaxed)
        push(buffer, src: src)
    }
}

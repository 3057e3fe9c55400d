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
/// Like ``SrcPad``, a GStreamer task reads the subscription's cache with a bounded wait and
/// pushes; the network only fills the cache. A buffer's PTS is the frame's timestamp on the
/// broadcast's shared timeline once media has anchored it (moqsink stamps data frames with the
/// running time, as its media), so data lines up with what is shown; before that, and for tracks
/// not in µs, buffers carry no timestamp. The stream is sparse (a GAP follows its segment), so
/// sinks on a silent or missing track do not hold the pipeline in PAUSED.
final class DataPad: @unchecked Sendable {
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

    let pad: UnsafeMutablePointer<GstPad>
    let name: String
    let trackName: String
    private weak var src: MoqSrc?
    private let pending = Lock<Source?>(nil)
    private let wake = ConditionSignal()
    private let stopping = Atomic(false)
    private let readerRef = Lock<TrackReader?>(nil)
    private let eosRequested = Atomic(false)
    /// Frames pushed (for the tests and the log).
    let frames = Atomic<UInt64>(0)

    // Streaming-thread state.
    private var source: Source?
    private var remote: RemoteTrack?
    private var reader: TrackReader?
    private var started = false
    private var gapSent = false
    private var discont = true
    private var eosSent = false

    init(pad: UnsafeMutablePointer<GstPad>, name: String, trackName: String, src: MoqSrc) {
        self.pad = pad
        self.name = name
        self.trackName = trackName
        self.src = src
    }

    /// Reads `source` from the next iteration on (a new session after a reconnect, a new broadcast).
    func play(_ source: Source) {
        pending.withLock { $0 = source }
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    /// Ends the stream from the pad's thread.
    func requestEOS() {
        eosRequested.store(true, ordering: .releasing)
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    func start() {
        stopping.store(false, ordering: .releasing)
        let box = Unmanaged.passRetained(self).toOpaque()
        gst_pad_start_task(
            pad, { data in Unmanaged<DataPad>.fromOpaque(data!).takeUnretainedValue().iterate() }, box,
            { data in Unmanaged<DataPad>.fromOpaque(data!).release() })
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
        readerRef.withLock { $0?.cancel() }
        wake.signal()
        gst_pad_stop_task(pad)
        remote?.cancel()
        remote = nil
        reader = nil
        readerRef.withLock { $0 = nil }
    }

    private func iterate() {
        guard !stopping.load(ordering: .acquiring), let src else {
            gst_pad_pause_task(pad)
            return
        }
        let generation = wake.current
        if eosRequested.exchange(false, ordering: .acquiring), !eosSent {
            eosSent = true
            gst_pad_push_event(pad, gst_event_new_eos())
            gst_pad_pause_task(pad)
            return
        }
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
        // Data is not skipped to catch up: every frame the relay still has within the budget.
        let budget = max(src.latencyMs, 10_000) + (src.longFormBufferMs ?? 0)
        let remote = next.session.subscribe(
            broadcast: next.broadcast, track: trackName,
            range: SubscriptionRange(priority: 3, maxLatencyMs: budget))
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
            var segment = GstSegment()
            gst_segment_init(&segment, GST_FORMAT_TIME)
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
        let timescale = remote?.track.info?.timescale
        if timescale == 1_000_000,
            let pts = src.timeline.withLock({ t -> UInt64? in
                t.offsetNs == nil ? nil : t.runningTime(of: frame.timestampUs)
            })
        {
            swiftmoq_buffer_set_pts(buffer, GstClockTime(pts))
        }
        if discont {
            swiftmoq_buffer_set_flags(buffer, GST_BUFFER_FLAG_DISCONT.rawValue)
            discont = false
        }
        frames.add(1, ordering: .relaxed)
        switch gst_pad_push(pad, buffer) {
        case GST_FLOW_OK, GST_FLOW_NOT_LINKED: break
        case GST_FLOW_FLUSHING: gst_pad_pause_task(pad)
        default:
            eosSent = true
            gst_pad_pause_task(pad)
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
public import MoqPipeline
import MoqSync

/// Measures publish-to-render latency of frames within one process: a frame is stamped when it is
/// published and again when it is received, both on GStreamer's system clock (monotonic, shared by every
/// pipeline in the process, so no clock synchronisation is involved).
///
/// Frames are matched by a key both sides can compute. `moqsink` writes each buffer's running time in µs
/// as the frame timestamp, so ``Key/runningTimeMicros`` on the publisher matches the timestamp a
/// subscriber reads (``SubscribedFrame/timestampMicros``).
///
/// ```swift
/// let probe = LatencyProbe()
/// try probe.attachPublisher(to: publisher, element: "moq", pad: "sink_0")
/// … for each received frame: probe.received(key: frame.timestampMicros)
/// probe.report   // count, p50, p99, max
/// ```
public final class LatencyProbe: Sendable {
    /// How a buffer seen by a pad probe becomes a key.
    public enum Key: Sendable {
        /// The buffer's running time in µs (PTS, or DTS when there is none): `moqsink`'s frame timestamp.
        case runningTimeMicros
        /// The buffer's PTS in µs.
        case ptsMicros
        /// The publisher's timestamp `moqsrc` attaches to every buffer (the `timestamp/x-moq-publisher`
        /// reference meta, which decoders keep), in µs: a player's frames after `moqsrc`, decoded or not.
        case publisherTimeMicros
    }

    private struct State {
        var published: [UInt64: UInt64] = [:]
        var latencies: [UInt64] = []
        var unmatched = 0
    }

    private let state = Lock(State())

    /// A probe with nothing recorded.
    public init() {}

    /// Now on GStreamer's system clock, in ns.
    public static var now: UInt64 {
        GStreamer.initialize()
        let clock = gst_system_clock_obtain()!
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        return UInt64(gst_clock_get_time(clock))
    }

    /// Records that the frame `key` was published at `time` (now by default). The first stamp of a key wins.
    public func published(key: UInt64, at time: UInt64 = LatencyProbe.now) {
        state.withLock { s in
            if s.published[key] == nil { s.published[key] = time }
        }
    }

    /// Records that the frame `key` was received at `time` (now by default); a key never published counts
    /// as unmatched.
    public func received(key: UInt64, at time: UInt64 = LatencyProbe.now) {
        state.withLock { s in
            guard let sent = s.published[key] else {
                s.unmatched += 1
                return
            }
            s.latencies.append(time >= sent ? time - sent : 0)
        }
    }

    /// Stamps every buffer reaching `element`'s `pad` in `pipeline` as published.
    ///
    /// - Throws: ``TestKitError/pipeline(_:)`` when the element or pad does not exist.
    public func attachPublisher(
        to pipeline: Pipeline, element: String, pad: String = "sink", key: Key = .runningTimeMicros
    ) throws(TestKitError) {
        try attach(to: pipeline, element: element, pad: pad, key: key, publishing: true)
    }

    /// Stamps every buffer reaching `element`'s `pad` in `pipeline` as received.
    public func attachSubscriber(
        to pipeline: Pipeline, element: String, pad: String = "sink", key: Key = .runningTimeMicros
    ) throws(TestKitError) {
        try attach(to: pipeline, element: element, pad: pad, key: key, publishing: false)
    }

    private func attach(to pipeline: Pipeline, element: String, pad: String, key: Key, publishing: Bool)
        throws(TestKitError)
    {
        let handle: ElementHandle
        do { handle = try pipeline.element(named: element) } catch { throw .pipeline(error) }
        guard let padRef = handle.pad(pad) else { throw .pipeline(.noSuchElement("\(element).\(pad)")) }
        let context = Unmanaged.passRetained(PadStamp(probe: self, key: key, publishing: publishing)).toOpaque()
        gst_pad_add_probe(
            padRef.pointer, GST_PAD_PROBE_TYPE_BUFFER,
            { pad, info, userData in
                guard let pad, let info, let userData, let buffer = swiftmoq_probe_info_buffer(info) else {
                    return GST_PAD_PROBE_OK
                }
                Unmanaged<PadStamp>.fromOpaque(userData).takeUnretainedValue().stamp(pad, buffer)
                return GST_PAD_PROBE_OK
            }, context, { Unmanaged<PadStamp>.fromOpaque($0!).release() })
    }

    /// What has been measured so far.
    public var report: LatencyReport {
        state.withLock {
            LatencyReport(latencies: $0.latencies, published: $0.published.count, unmatched: $0.unmatched)
        }
    }
}

/// A pad probe's context: which probe, which side, which key.
private final class PadStamp: Sendable {
    /// The reference of moqsrc's publisher-time meta.
    nonisolated(unsafe) static let publisherTime = gst_caps_new_empty_simple("timestamp/x-moq-publisher")!

    let probe: LatencyProbe
    let key: LatencyProbe.Key
    let publishing: Bool

    init(probe: LatencyProbe, key: LatencyProbe.Key, publishing: Bool) {
        self.probe = probe
        self.key = key
        self.publishing = publishing
    }

    func stamp(_ pad: UnsafeMutablePointer<GstPad>, _ buffer: UnsafeMutablePointer<GstBuffer>) {
        let now = LatencyProbe.now
        if case .publisherTimeMicros = key {
            guard let meta = gst_buffer_get_reference_timestamp_meta(buffer, Self.publisherTime) else { return }
            let micros = UInt64(meta.pointee.timestamp) / 1000
            if publishing { probe.published(key: micros, at: now) } else { probe.received(key: micros, at: now) }
            return
        }
        var time = swiftmoq_buffer_pts(buffer)
        if swiftmoq_clock_time_is_valid(time) == 0 { time = swiftmoq_buffer_dts(buffer) }
        guard swiftmoq_clock_time_is_valid(time) != 0 else { return }
        if case .runningTimeMicros = key {
            guard let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) else { return }
            defer { gst_event_unref(event) }
            var segment: UnsafePointer<GstSegment>?
            gst_event_parse_segment(event, &segment)
            guard let segment else { return }
            time = gst_segment_to_running_time(segment, GST_FORMAT_TIME, time)
            guard swiftmoq_clock_time_is_valid(time) != 0 else { return }
        }
        let micros = UInt64(time) / 1000
        if publishing { probe.published(key: micros, at: now) } else { probe.received(key: micros, at: now) }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import CGstVideo
import GstSupport
import MoqCatalog
import MoqMedia
import MoqSync
import SwiftMoQ
import Synchronization

/// One `sink_%u` pad: its caps become a catalog rendition, its buffers frames of
/// one track (legacy container: `varint(µs) + codec bytes`).
///
/// - Video: a new group at each keyframe (nothing is published before the first
///   one); each finished group ends with hang's empty "end of group" frame.
/// - Audio: one frame per group.
/// - Timestamps: the buffer's running time in µs — one clock for all pads, so the
///   A/V offset survives; B-frames (non-monotonic PTS) are fine.
///
/// Everything here runs on the pad's streaming thread and never waits: frames go
/// into the track's in-memory cache and the network side reads them from there.
final class SinkPad: @unchecked Sendable {
    let pad: UnsafeMutablePointer<GstPad>
    let name: String
    let index: Int
    private weak var sink: MoqSink?

    // Streaming-thread state.
    private var segment = GstSegment()
    private var hasSegment = false
    private var format: PadFormat?
    private var track: TrackProducer?
    private var group: GroupProducer?
    private var warnedTime = false
    /// Set by the streaming thread, read by the element's EOS aggregation on another.
    private let eos = Atomic(false)
    private var isData = false
    /// Set for a caption pad (`text/x-raw`): `markup` when its text is Pango markup.
    private var text: (markup: Bool, warned: Bool)?
    /// Set for a fragmented MP4 input (`video/quicktime`): its tracks are published as CMAF.
    private var cmaf: CMAFInput?
    /// The publisher item this pad's groups belong to (moqsink's `item`).
    private var startedItem: UInt64 = 0
    private var keyframeRequested = false
    /// The encoder's bitrate from its tags (bit/s), else what the meter measured: the catalog's.
    private var tagBitrate: UInt64?
    private var meter = BitrateMeter()
    /// Keyframes asked for on the sink's grid (a ladder), while it has one.
    private var grid: KeyframeGrid?
    /// Set once caps made this a video pad (read by the sink for its keyframe grid).
    private let video = Atomic(false)
    var isVideo: Bool { video.load(ordering: .relaxed) }

    struct Stats {
        var frames: UInt64 = 0
        var groups: UInt64 = 0
        var bytes: UInt64 = 0
        var dropped: UInt64 = 0
    }

    private let counters = Lock(Stats())
    private let published = Lock<String?>(nil)

    init(pad: UnsafeMutablePointer<GstPad>, name: String, index: Int) {
        self.pad = pad
        self.name = name
        self.index = index
        gst_segment_init(&segment, GST_FORMAT_TIME)
    }

    var stats: Stats { counters.withLock { $0 } }
    var trackName: String? { published.withLock { $0 } }
    var isEOS: Bool { eos.load(ordering: .acquiring) }

    /// Sets the pad's `track-status` (and `track-error`), notifying when they change.
    private func setStatus(_ status: TrackStatus, error: String? = nil) {
        guard MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).setStatus(status, error: error) else { return }
        let object = UnsafeMutableRawPointer(pad).assumingMemoryBound(to: GObject.self)
        g_object_notify(object, "track-status")
        g_object_notify(object, "track-error")
    }

    /// The element started: publishing may begin.
    func attach(to sink: MoqSink) {
        self.sink = sink
        eos.store(false, ordering: .releasing)
    }

    /// The element stopped: forget the broadcast's objects (caps come again on restart).
    func detach() {
        isData = false
        text = nil
        cmaf = nil
        startedItem = 0
        keyframeRequested = false
        tagBitrate = nil
        meter = BitrateMeter()
        grid = nil
        video.store(false, ordering: .relaxed)
        group = nil
        track = nil
        format = nil
        sink = nil
        published.withLock { $0 = nil }
        setStatus(.waiting)
    }

    /// The pad was released: its track ends and leaves the catalog.
    func release() {
        group?.finish()
        track?.finish()
        cmaf?.finish()
        for name in cmaf?.trackNames ?? [] { sink?.updateCatalog(track: name, config: nil) }
        if let name = trackName { sink?.updateCatalog(track: name, config: nil) }
        detach()
    }

    // MARK: Events

    func event(_ event: UnsafeMutablePointer<GstEvent>, parent: UnsafeMutablePointer<GstObject>?) -> gboolean {
        switch swiftmoq_event_type(event) {
        case GST_EVENT_CAPS:
            var caps: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &caps)
            let ok = caps.map(setCaps) ?? false
            gst_event_unref(event)
            return ok ? 1 : 0
        case GST_EVENT_SEGMENT:
            gst_event_copy_segment(event, &segment)
            hasSegment = segment.format == GST_FORMAT_TIME
            // A muxer's byte stream (fragmented MP4) carries its own timing.
            if !hasSegment && cmaf == nil {
                sink?.reporter.warning(
                    .stream(GST_STREAM_ERROR_FORMAT),
                    "\(name): a non-TIME segment: buffers are dropped until a TIME segment")
            }
            gst_event_unref(event)
            return 1
        case GST_EVENT_TAG:
            // Title, artist, album, duration, artwork: the broadcast's now-playing track.
            var list: UnsafeMutablePointer<GstTagList>?
            gst_event_parse_tag(event, &list)
            if let list {
                sink?.tagsArrived(list)
                if let bps = TagReading(list).bitrate, bps != tagBitrate {
                    tagBitrate = bps
                    republish()
                }
            }
            gst_event_unref(event)
            return 1
        case GST_EVENT_FLUSH_STOP:
            gst_segment_init(&segment, GST_FORMAT_TIME)
            group?.finish()
            group = nil
            gst_event_unref(event)
            return 1
        case GST_EVENT_EOS:
            group?.finish()
            group = nil
            track?.finish()
            cmaf?.finish()
            eos.store(true, ordering: .releasing)
            if MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).status.status != .error { setStatus(.ended) }
            sink?.padReachedEOS()
            gst_event_unref(event)
            return 1
        default:
            return gst_pad_event_default(pad, parent, event)
        }
    }

    /// The caps of a data pad: each buffer is one frame, published as is, in a group of its own.
    static let dataCaps = "application/x-moq-data"

    private func setCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool {
        guard let sink, let run = sink.run else { return false }
        if let structure = gst_caps_get_structure(caps, 0) {
            switch String(cString: gst_structure_get_name(structure)) {
            case Self.dataCaps: return setDataCaps(sink: sink, run: run)
            case "text/x-raw":
                let format = gst_structure_get_string(structure, "format").map { String(cString: $0) }
                return setTextCaps(markup: format == "pango-markup", sink: sink, run: run)
            case "video/quicktime":
                // Fragmented MP4: the tracks are found in the init segment, in the data.
                if cmaf == nil {
                    let props = MoqSinkPadType.state(UnsafeMutableRawPointer(pad))
                    cmaf = CMAFInput(padIndex: index, padTrackName: props.lock())
                    sink.noteUpstream(live: upstreamIsLive())
                }
                setStatus(.publishing)
                return true
            default: break
            }
        }
        cmaf = nil
        let newFormat: PadFormat
        switch PadFormat.from(caps: caps) {
        case .failure(let error):
            let text = GstSupport.capsString(caps)
            // The pad's status first: whoever the ERROR wakes reads `track-status` = error.
            setStatus(.error, error: "unsupported caps: \(error)")
            sink.reporter.error(.stream(GST_STREAM_ERROR_FORMAT), "\(name): unsupported caps: \(error)", debug: text)
            return false
        case .success(let f): newFormat = f
        }
        if let format, format == newFormat { return true }
        isData = false
        warnIfRarelyDecodable(caps, sink: sink)
        let props = MoqSinkPadType.state(UnsafeMutableRawPointer(pad))
        let trackName = props.lock() ?? "\(index).\(newFormat.family)"
        // A new format (or codec) is a new track under the same name.
        group?.finish()
        group = nil
        track?.finish()
        let info =
            newFormat.kind == .video
            ? TrackInfo(priority: 60, maxAgeMs: sink.cacheDurationMs, timescale: 1_000_000)
            : TrackInfo(priority: 80, maxAgeMs: sink.cacheDurationMs, timescale: 1_000_000)
        track = run.broadcast.createTrack(trackName, info: info)
        format = newFormat
        published.withLock { $0 = trackName }
        video.store(newFormat.kind == .video, ordering: .relaxed)
        sink.videoPadsChanged()
        sink.noteUpstream(live: upstreamIsLive())
        sink.updateCatalog(track: trackName, config: catalogConfig(newFormat))
        sink.reporter.log(GST_LEVEL_INFO, "\(name): publishing \(trackName) (\(newFormat.codec))")
        setStatus(.publishing)
        return true
    }

    /// A data track (chat, telemetry…): named by the pad's `track` (default `<index>.data`), not
    /// in the catalog, one frame per buffer without the legacy timestamp prefix.
    private func setDataCaps(sink: MoqSink, run: MoqSink.Running) -> Bool {
        if isData, track != nil { return true }
        let name = MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).lock() ?? "\(index).data"
        group?.finish()
        group = nil
        track?.finish()
        if format != nil, let old = trackName { sink.updateCatalog(track: old, config: nil) }
        format = nil
        isData = true
        track = run.broadcast.createTrack(
            name, info: TrackInfo(priority: 90, maxAgeMs: sink.cacheDurationMs, timescale: 1_000_000))
        published.withLock { $0 = name }
        sink.reporter.log(GST_LEVEL_INFO, "\(self.name): publishing data track \(name)")
        setStatus(.publishing)
        return true
    }

    /// A caption track (`text/x-raw`, UTF-8 or Pango markup): named by the pad's `track` (default
    /// `<index>.wvtt`), in the catalog's `captions` section, one cue per group (its text, then an
    /// empty frame at its end when the buffer has a duration).
    private func setTextCaps(markup: Bool, sink: MoqSink, run: MoqSink.Running) -> Bool {
        if let text, track != nil {
            self.text = (markup, text.warned)
            return true
        }
        let name = MoqSinkPadType.state(UnsafeMutableRawPointer(pad)).lock() ?? "\(index).wvtt"
        group?.finish()
        group = nil
        track?.finish()
        if format != nil, let old = trackName { sink.updateCatalog(track: old, config: nil) }
        format = nil
        isData = false
        text = (markup, false)
        track = run.broadcast.createTrack(
            name, info: TrackInfo(priority: 70, maxAgeMs: sink.cacheDurationMs, timescale: 1_000_000))
        published.withLock { $0 = name }
        sink.updateCatalog(caption: name, config: CaptionConfig())
        sink.reporter.log(GST_LEVEL_INFO, "\(self.name): publishing captions \(name)")
        setStatus(.publishing)
        return true
    }

    /// One cue: its text at its running time, and an empty frame at its end when it has a duration.
    /// A buffer that is not UTF-8 (or absurdly long) is dropped with a WARNING; the track goes on.
    private func chainText(
        _ buffer: UnsafeMutablePointer<GstBuffer>, track: TrackProducer, markup: Bool, sink: MoqSink
    ) -> GstFlowReturn {
        var pts = swiftmoq_buffer_pts(buffer)
        if swiftmoq_clock_time_is_valid(pts) == 0 { pts = swiftmoq_buffer_dts(buffer) }
        let running = hasSegment ? gst_segment_to_running_time(&segment, GST_FORMAT_TIME, pts) : pts
        guard swiftmoq_clock_time_is_valid(running) != 0 else {
            drop()
            return GST_FLOW_OK
        }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_FLOW_ERROR }
        let cue = CaptionText.cue(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)), markup: markup)
        gst_buffer_unmap(buffer, &map)
        let text: String
        switch cue {
        case .failure(let problem):
            drop()
            if self.text?.warned == false {
                self.text?.warned = true
                sink.reporter.warning(
                    .stream(GST_STREAM_ERROR_FORMAT),
                    "\(name): a caption buffer was dropped: \(problem) (text/x-raw must be UTF-8; later ones are "
                        + "dropped too, at DEBUG only)")
            } else {
                sink.reporter.log(GST_LEVEL_DEBUG, "\(name): caption buffer dropped: \(problem)")
            }
            return GST_FLOW_OK
        case .success(let t): text = t
        }
        let micros = UInt64(running) / 1000
        let duration = swiftmoq_buffer_duration(buffer)
        let bytes = Array(text.utf8)
        guard let frame = try? bytes.withUnsafeBytes({ try LegacyFrame.encode(timestamp: micros, payload: $0) })
        else { return GST_FLOW_OK }
        let group = track.appendGroup()
        group.write(frame, timestamp: micros)
        if swiftmoq_clock_time_is_valid(duration) != 0 {
            let endUs = micros &+ UInt64(duration) / 1000
            if let end = try? LegacyFrame.endOfGroup(timestamp: endUs) { group.write(end, timestamp: endUs) }
        }
        group.finish()
        counted(text.utf8.count, newGroup: true)
        return GST_FLOW_OK
    }

    /// Whether what feeds this pad is live (a capture, a live test source) or not (a file read as
    /// fast as it goes): the LATENCY query upstream. Nil when upstream does not answer.
    private func upstreamIsLive() -> Bool? {
        guard let query = gst_query_new_latency() else { return nil }
        defer { gst_query_unref(query) }
        guard gst_pad_peer_query(pad, query) != 0 else { return nil }
        var live: gboolean = 0
        gst_query_parse_latency(query, &live, nil, nil)
        return live != 0
    }

    /// H.264/H.265 in 4:2:2 or 4:4:4 (x264enc's default for RGB input) plays almost nowhere:
    /// browsers' WebCodecs and openh264 (moq-dev's players) refuse it.
    private func warnIfRarelyDecodable(_ caps: UnsafeMutablePointer<GstCaps>, sink: MoqSink) {
        guard let structure = gst_caps_get_structure(caps, 0),
            let profile = gst_structure_get_string(structure, "profile").map({ String(cString: $0) }),
            profile.contains("4:4:4") || profile.contains("4:2:2")
        else { return }
        sink.reporter.warning(
            .stream(GST_STREAM_ERROR_FORMAT),
            "\(name): profile \(profile) is not decodable by most players (browsers, openh264): "
                + "put video/x-raw,format=I420 before the encoder")
    }

    // MARK: Buffers

    func chain(_ buffer: UnsafeMutablePointer<GstBuffer>) -> GstFlowReturn {
        defer { gst_buffer_unref(buffer) }
        guard let sink, sink.run != nil else { return GST_FLOW_FLUSHING }
        if isData, let track { return chainData(buffer, track: track) }
        if let text, let track { return chainText(buffer, track: track, markup: text.markup, sink: sink) }
        if let cmaf, let run = sink.run { return chainCMAF(buffer, input: cmaf, sink: sink, run: run) }
        guard let format, let track else { return GST_FLOW_NOT_NEGOTIATED }
        guard hasSegment else {
            drop()
            return GST_FLOW_OK
        }
        if format.rendition.layout == .flacFrame, swiftmoq_buffer_has_flag(buffer, GST_BUFFER_FLAG_HEADER.rawValue) != 0
        {
            // flacparse's header buffers (the marker, STREAMINFO, tags) are in the description.
            return GST_FLOW_OK
        }
        var pts = swiftmoq_buffer_pts(buffer)
        if swiftmoq_clock_time_is_valid(pts) == 0 { pts = swiftmoq_buffer_dts(buffer) }
        let running = gst_segment_to_running_time(&segment, GST_FORMAT_TIME, pts)
        guard swiftmoq_clock_time_is_valid(pts) != 0, swiftmoq_clock_time_is_valid(running) != 0 else {
            // No time, or before the segment (negative running time): never clamped.
            drop()
            if !warnedTime {
                warnedTime = true
                sink.reporter.log(GST_LEVEL_WARNING, "\(name): dropping buffers without a valid running time")
            }
            return GST_FLOW_OK
        }
        let micros = UInt64(running) / 1000
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_FLOW_ERROR }
        let bytes = UnsafeRawBufferPointer(start: map.data, count: Int(map.size))
        if format.isProvisional, swiftmoq_buffer_is_delta(buffer) == 0 {
            // The caps lacked what the codec string needs: complete it from this keyframe.
            let refined = format.refined(withKeyframe: bytes)
            if refined != format, let name = trackName {
                self.format = refined
                sink.updateCatalog(track: name, config: catalogConfig(refined))
            }
        }
        let payload = try? LegacyFrame.encode(timestamp: micros, payload: bytes)
        let size = Int(map.size)
        gst_buffer_unmap(buffer, &map)
        guard let payload else { return GST_FLOW_ERROR }
        if tagBitrate == nil, meter.observe(size: size, atNs: UInt64(running)) != nil { republish() }
        if format.kind == .video { askForGridKeyframes(atNs: UInt64(running), sink: sink) }

        // The publisher moved to another item (moqsink's `item`): this pad's next group starts it.
        let item = sink.requestedItem
        let itemChanged = item != startedItem
        switch format.kind {
        case .audio:
            track.writeSingleFrameGroup(payload, timestamp: micros)
            counted(size, newGroup: true)
            if itemChanged {
                startedItem = item
                sink.itemStarted(item, atUs: micros)
            }
        case .video:
            let keyframe = swiftmoq_buffer_is_delta(buffer) == 0
            if itemChanged {
                if keyframe {
                    startedItem = item
                    sink.itemStarted(item, atUs: micros)
                } else if !keyframeRequested {
                    // The item starts at a group, and video groups start at keyframes: ask for one.
                    keyframeRequested = true
                    gst_pad_push_event(
                        pad, gst_video_event_new_upstream_force_key_unit(swiftmoq_clock_time_none(), 1, 0))
                }
            }
            if keyframe {
                keyframeRequested = false
                if let group, let end = try? LegacyFrame.endOfGroup(timestamp: micros) {
                    // hang's trailing empty frame: closes the last frame's duration.
                    group.write(end, timestamp: micros)
                    group.finish()
                }
                group = track.appendGroup()
            } else if group == nil {
                // Waiting for the first keyframe.
                drop()
                return GST_FLOW_OK
            }
            group!.write(payload, timestamp: micros)
            counted(size, newGroup: keyframe)
        }
        return GST_FLOW_OK
    }

    /// The catalog's config of `format`: with the bitrate the encoder said, or the one measured.
    private func catalogConfig(_ format: PadFormat) -> RenditionConfig {
        var config = format.config
        let bitrate = tagBitrate ?? meter.published
        switch config {
        case .video(var v):
            if let bitrate { v.bitrate = bitrate }
            config = .video(v)
        case .audio(var a):
            if let bitrate { a.bitrate = bitrate }
            config = .audio(a)
        }
        return config
    }

    /// The bitrate changed: the catalog says so.
    private func republish() {
        guard let format, let name = trackName, !isData, cmaf == nil else { return }
        sink?.updateCatalog(track: name, config: catalogConfig(format))
    }

    /// A ladder (the sink has several video pads): asks this pad's encoder for keyframes on the
    /// sink's grid (see ``KeyframeGrid``).
    private func askForGridKeyframes(atNs running: UInt64, sink: MoqSink) {
        let period = sink.keyframeGridNs
        guard period > 0 else {
            grid = nil
            return
        }
        var current = grid?.periodNs == period ? grid ?? KeyframeGrid(periodNs: period) : KeyframeGrid(periodNs: period)
        for point in current.frame(atNs: running) {
            gst_pad_push_event(pad, gst_video_event_new_upstream_force_key_unit(GstClockTime(point), 1, 0))
        }
        grid = current
    }

    private func chainData(_ buffer: UnsafeMutablePointer<GstBuffer>, track: TrackProducer) -> GstFlowReturn {
        var pts = swiftmoq_buffer_pts(buffer)
        if swiftmoq_clock_time_is_valid(pts) == 0 { pts = swiftmoq_buffer_dts(buffer) }
        let running = hasSegment ? gst_segment_to_running_time(&segment, GST_FORMAT_TIME, pts) : pts
        let micros = swiftmoq_clock_time_is_valid(running) != 0 ? UInt64(running) / 1000 : 0
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_FLOW_ERROR }
        let payload = Bytes(copying: UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
        gst_buffer_unmap(buffer, &map)
        track.writeSingleFrameGroup(payload, timestamp: micros)
        counted(payload.count, newGroup: true)
        return GST_FLOW_OK
    }

    private func chainCMAF(
        _ buffer: UnsafeMutablePointer<GstBuffer>, input: CMAFInput, sink: MoqSink, run: MoqSink.Running
    ) -> GstFlowReturn {
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_FLOW_ERROR }
        defer { gst_buffer_unmap(buffer, &map) }
        do {
            let progress = try input.take(
                UnsafeRawBufferPointer(start: map.data, count: Int(map.size)), sink: sink, run: run)
            if let first = input.trackNames.first { published.withLock { $0 = first } }
            counters.withLock {
                $0.frames += UInt64(progress.frames)
                $0.groups += UInt64(progress.groups)
                $0.bytes += UInt64(progress.bytes)
                $0.dropped += UInt64(progress.dropped)
            }
            return GST_FLOW_OK
        } catch {
            setStatus(.error, error: "fragmented MP4 input: \(error.message)")
            sink.reporter.error(.stream(GST_STREAM_ERROR_DEMUX), "\(name): fragmented MP4 input: \(error.message)")
            return GST_FLOW_ERROR
        }
    }

    private func counted(_ bytes: Int, newGroup: Bool) {
        counters.withLock {
            $0.frames += 1
            $0.bytes += UInt64(bytes)
            if newGroup { $0.groups += 1 }
        }
    }

    private func drop() { counters.withLock { $0.dropped += 1 } }
}

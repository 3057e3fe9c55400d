// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog
import MoqPlayback
import MoqWire

/// Frames to buffers: the playout decides, the pad carries the answer to GStreamer.
extension SrcPad {
    func handle(
        _ frame: MediaFrame, reader: TrackReader, source: Source, now: PlayoutNow, src: MoqSrc, generation: UInt64
    ) {
        // Read before a seek that is about to move the reader: not played.
        if seekPending.load(ordering: .acquiring) { return }
        let view = reader.view(after: frame.group)
        let decision = playout.decide(
            PlayoutFrame(
                lane: lane, epoch: source.epoch, group: frame.group, index: frame.index,
                timestampUs: frame.timestampUs, payloadBytes: frame.payload.count, arrivalNs: frame.arrivalNs),
            view: view, now: now)
        switch decision {
        case .hold(let until, let primes):
            held = (frame, reader)
            if primes {
                // The frame itself first, an hour before running time 0 (the segment clips what is
                // decoded from it): parsers and decoders negotiate on real data and decodebin plugs
                // and exposes the decoder, without a sound. (A GAP alone made opusparse pick default
                // caps, which mp4mux then refused to change.) Then a GAP at running time 0: the
                // sink prerolls on it, and the pipeline can play before the join places a frame.
                if let buffer = Self.wrap(frame.payload) {
                    swiftmoq_buffer_set_pts(buffer, StreamEvents.pts(running: PlayoutCore.beforeRunningTimeNs))
                    swiftmoq_buffer_set_flags(
                        buffer, GST_BUFFER_FLAG_DECODE_ONLY.rawValue | GST_BUFFER_FLAG_DISCONT.rawValue)
                    _ = gst_pad_push(pad, buffer)
                }
                StreamEvents.pushPrerollGap(pad: pad)
                playout.pushReturned(lane)
                let tookNs = monotonicNow() &- now.monotonicNs
                src.reporter.log(
                    GST_LEVEL_DEBUG, "\(name): set up before the first frame in \(tookNs / 1_000_000) ms")
            }
            let wait = until > now.monotonicNs ? until - now.monotonicNs : 0
            if wait > 0 { wake.wait(since: generation, timeoutNs: wait) }
        case .drop(let reason):
            if reason != .beforeJoin { counters.dropped() }
            reportDrop(reason, frame: frame, source: source, src: src)
        case .skipGroup(let reason):
            reader.skipRestOfGroup()
            counters.dropped()
            reportDrop(reason, frame: frame, source: source, src: src)
        case .push(let push):
            pushFrame(frame, push, source: source, edgeUs: view.edge?.timestampUs, now: now, src: src)
            // Its decoder negotiated on the frame (or negotiates on the GAP); the sink prerolls on the
            // GAP, and the pipeline plays once every sink has.
            if push.prerolls { StreamEvents.pushPrerollGap(pad: pad) }
            if push.primes {
                playout.pushReturned(lane)
                // What the join waited for: downstream's setup (decodebin plugging a decoder).
                let tookNs = monotonicNow() &- now.monotonicNs
                src.reporter.log(GST_LEVEL_DEBUG, "\(name): first push returned after \(tookNs / 1_000_000) ms")
            }
        }
    }

    /// Posts `moq-drop` for a playout drop while `diagnostics` is on.
    private func reportDrop(_ reason: PlayoutDrop, frame: MediaFrame, source: Source, src: MoqSrc) {
        guard src.diagnostics.load(ordering: .relaxed),
            let report = DropReport(
                reason, kind: kind, track: source.trackName, ptsUs: frame.timestampUs, group: frame.group,
                bytes: frame.payload.count)
        else { return }
        src.events.post(report)
    }

    private func pushFrame(
        _ frame: MediaFrame, _ push: PlayoutPush, source: Source, edgeUs: UInt64?, now: PlayoutNow, src: MoqSrc
    ) {
        if let tags = pendingTags {
            pendingTags = nil
            if let list = tags.take() { gst_pad_push_event(pad, gst_event_new_tag(list)) }
        }
        if let start = push.segmentStartNs { StreamEvents.pushClip(pad: pad, startNs: start) }
        if push.decodeOnly {
            src.reporter.log(
                GST_LEVEL_LOG,
                "\(name): decode-only \(frame.timestampUs / 1000) ms at \(push.pts / 1_000_000) ms"
                    + (push.segmentStartNs.map { ", segment from \($0 / 1_000_000) ms" } ?? ""))
        }
        if case .joined(let clip) = push.note {
            src.reporter.log(
                GST_LEVEL_DEBUG,
                "\(name): joined at \(frame.timestampUs) µs (group \(frame.group) index \(frame.index)), pushed at "
                    + "running time \(push.pts / 1_000_000) ms (now \(now.runningNs / 1_000_000) ms, clip "
                    + "\(clip / 1_000_000) ms)")
        }
        if case .retargeted(let shift) = push.note, !startingAfterSeek {
            // Nothing was playing yet when a seek's first frame misses its margin: the timeline
            // moves as an anchor would, and no sample was late.
            src.reporter.log(
                GST_LEVEL_DEBUG,
                "\(name): late at \(frame.timestampUs) µs (group \(frame.group) index \(frame.index)): "
                    + "timeline moved \(shift / 1_000_000) ms later")
            if !playout.policy.isLive {
                counters.underrun()
                src.reporter.log(
                    GST_LEVEL_INFO,
                    "\(name): underrun at \(frame.timestampUs) µs (group \(frame.group) index \(frame.index)): "
                        + "\(shift / 1_000_000) ms late, running time \(now.runningNs / 1_000_000) ms")
            }
            src.events.post(
                "rebuffer.end", kind: kind, track: source.trackName,
                [("added-latency-ms", .double(Double(shift) / 1e6))])
        }
        guard let buffer = Self.wrap(frame.payload) else { return }
        swiftmoq_buffer_set_pts(buffer, StreamEvents.pts(running: push.pts))
        // The publisher's own timestamp travels with the buffer (decoders keep the meta), so an
        // application can line frames up with data tracks or measure end-to-end latency.
        gst_buffer_add_reference_timestamp_meta(
            buffer, Self.publisherTimeCaps, GstClockTime(Self.nanoseconds(frame.timestampUs)),
            swiftmoq_clock_time_none())
        var flags: UInt32 = 0
        if kind == .video && !frame.startsGroup { flags |= GST_BUFFER_FLAG_DELTA_UNIT.rawValue }
        if push.discont { flags |= GST_BUFFER_FLAG_DISCONT.rawValue }
        if push.decodeOnly { flags |= GST_BUFFER_FLAG_DECODE_ONLY.rawValue }
        if flags != 0 { swiftmoq_buffer_set_flags(buffer, flags) }
        if !readyPosted {
            readyPosted = true
            src.events.post(
                "track.ready", kind: kind, track: source.trackName,
                [
                    ("source-timestamp-us", .uint64(frame.timestampUs)),
                    ("keyframe", .bool(frame.startsGroup)),
                    ("payload-bytes", .uint64(UInt64(frame.payload.count))),
                    ("target-buffering-ms", .uint64(policy.latencyMs)),
                ])
        }
        // The live edge's running time, from this frame's (one offset): how long until it renders.
        let edge = max(edgeUs ?? frame.timestampUs, frame.timestampUs)
        let edgePts = push.pts &+ Int64(clamping: Self.nanoseconds(edge - frame.timestampUs))
        let renderDelay = Int64(clamping: push.renderDelayNs)
        let size = frame.payload.count
        lastPushedUs.store(max(1, frame.timestampUs), ordering: .relaxed)
        self.push(buffer, src: src)
        startingAfterSeek = false
        if let stall = counters.framePushed(
            bytes: size, now: monotonicNow(), liveEdgeUs: edge,
            // Clamping: a publisher's timestamps can put the live edge at the end of time.
            slackNs: push.decodeOnly ? nil : edgePts &+ renderDelay &- Int64(clamping: now.runningNs),
            bufferNs: edgePts > push.pts ? UInt64(edgePts &- push.pts) : 0)
        {
            src.events.post(
                "track.stall.end", kind: kind, track: source.trackName,
                [("duration-ms", .double(Double(stall) / 1e6))])
        }
        src.firstBufferPushed(by: self)
    }

    /// The reference of the `GstReferenceTimestampMeta` carrying the publisher's timestamp (ns).
    nonisolated(unsafe) static let publisherTimeCaps: UnsafeMutablePointer<GstCaps> = gst_caps_new_empty_simple(
        "timestamp/x-moq-publisher")

    /// A publisher's µs timestamp in ns, saturating below GST_CLOCK_TIME_NONE (any varint may arrive).
    static func nanoseconds(_ micros: UInt64) -> UInt64 {
        let (ns, overflow) = micros.multipliedReportingOverflow(by: 1000)
        return overflow ? UInt64(Int64.max) : min(ns, UInt64(Int64.max))
    }

    /// A buffer over the frame's bytes without copying them: the buffer keeps them alive.
    static func wrap(_ bytes: Bytes) -> UnsafeMutablePointer<GstBuffer>? {
        guard bytes.count > 0 else { return gst_buffer_new() }
        let box = Unmanaged.passRetained(BytesBox(bytes))
        // `Bytes` storage has a stable address for its lifetime (see MoqWire.Bytes), which the box extends.
        let base = bytes.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress!) }
        return gst_buffer_new_wrapped_full(
            GST_MEMORY_FLAG_READONLY, base, gsize(bytes.count), 0, gsize(bytes.count), box.toOpaque(),
            { data in Unmanaged<BytesBox>.fromOpaque(data!).release() })
    }
}

/// Keeps a frame's bytes alive for as long as GStreamer uses the buffer.
private final class BytesBox: Sendable {
    let bytes: Bytes
    init(_ bytes: Bytes) { self.bytes = bytes }
}

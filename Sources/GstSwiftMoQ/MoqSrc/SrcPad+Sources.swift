// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqMedia
import MoqPlayback
import SwiftMoQ

/// The sources the control queue hands a pad: subscriptions, readers, and the stream's sticky events.
extension SrcPad {
    func switchTo(_ next: Source, src: MoqSrc) {
        // Adaptive bitrate chooses the rung: a new catalog keeps the one playing.
        if next.ladder != nil, keepRung(next) { return }
        if let prepared = upcoming?.source, prepared.session === next.session, prepared.broadcast == next.broadcast,
            prepared.trackName == next.trackName
        {
            // The queue moved on: the prepared subscription plays once the current track ends
            // (the broadcast was unannounced; its last frames may still be arriving), at once if
            // it already did.
            upcoming?.source = next
            upcomingDueNs = reader == nil ? monotonicNow() : monotonicNow() &+ Self.spliceWaitNs
            return
        }
        let previous = source
        if let previous, previous.same(as: next), reader != nil {
            // Same track: only its caps may have changed (and whether a ladder plays).
            source = next
            if previous.rendition.caps != next.rendition.caps { startStream(next, src: src) }
            if (adaptive == nil) != (next.ladder == nil) { startAdaptive(next) }
            return
        }
        var continuing = false
        if policy.longFormBufferMs != nil, let previous, let oldReader = reader, let oldRemote = remote,
            previous.broadcast == next.broadcast, previous.trackName == next.trackName
        {
            // Long-form, the same track on a new session (a reconnect): what the old subscription
            // buffered is played first; the new one goes on after it (its repeats are dropped).
            draining?.remote.cancel()
            draining = (oldReader, oldRemote)
            continuing = true
        } else {
            remote?.cancel()
        }
        let (remote, reader) = subscribe(next, src: src)
        // A source the control queue chose over the queue's next one: that one waits for its turn.
        upcomingDueNs = nil
        held = nil
        self.remote = remote
        self.reader = reader
        readerRef.withLock { $0 = reader }
        source = next
        currentTrack.withLock { $0 = next.trackName }
        readyPosted = false
        counters.resetArrival()
        playout.reset(
            lane, .newSource(newEpoch: previous != nil && previous?.epoch != next.epoch, discont: !continuing))
        if let previous, previous.trackName != next.trackName {
            src.events.post(
                "track.switch", kind: kind, track: next.trackName,
                [("from", .string(previous.trackName)), ("automatic", .bool(false))])
        }
        startStream(next, src: src)
        startAdaptive(next)
    }

    /// A subscription to `next` and its reader, as ``switchTo(_:src:)`` and a queue's preroll make them;
    /// from its group `groupStart` on when given (a floor: the group in progress is not fetched).
    func subscribe(_ next: Source, src: MoqSrc, groupStart: UInt64? = nil) -> (RemoteTrack, TrackReader) {
        var range = policy.range(finite: next.finite)
        if let groupStart { range.groupStart = groupStart }
        let remote = next.session.subscribe(
            broadcast: next.broadcast, track: next.trackName, range: range,
            limits: policy.cacheLimits(finite: next.finite))
        let renderDelayMs = playout.renderDelayNs / 1_000_000
        readerBudgetMs = policy.readerBudgetMs(renderDelayMs: renderDelayMs, finite: next.finite)
        let reader = policy.reader(
            for: remote.track, renderDelayMs: renderDelayMs, finite: next.finite, cmaf: next.cmafTrack)
        return (remote, reader)
    }

    func dropSubscription() {
        endTrial()
        remote?.cancel()
        remote = nil
        reader = nil
        held = nil
        readerRef.withLock { $0 = nil }
        counters.resetArrival()
    }

    /// Another rung of the ladder plays: new caps (decoders renegotiate), the same stream.
    func renegotiate(_ source: Source, src: MoqSrc) {
        let caps: UnsafeMutablePointer<GstCaps>
        do { caps = try MediaFormat.makeCaps(for: source.rendition.rendition.config) } catch {
            src.reporter.warning(.stream(GST_STREAM_ERROR_CODEC_NOT_FOUND), "\(name): \(error)")
            return
        }
        defer { gst_caps_unref(caps) }
        stream.renegotiate(pad: pad, caps: caps)
    }

    /// stream-start, caps and segment for a (new) rendition.
    func startStream(_ source: Source, src: MoqSrc) {
        let caps: UnsafeMutablePointer<GstCaps>
        do { caps = try MediaFormat.makeCaps(for: source.rendition.rendition.config) } catch {
            src.reporter.warning(.stream(GST_STREAM_ERROR_CODEC_NOT_FOUND), "\(name): \(error)")
            return
        }
        defer { gst_caps_unref(caps) }
        stream.start(
            pad: pad, src: src, id: "\(source.broadcast)/\(source.trackName)", stream: src.stream(for: source),
            caps: caps)
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqCatalog
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// The `text_%u` pad of `moqsrc`: the catalog's first caption rendition as `text/x-raw,
/// format=utf8`, one buffer per cue, on the broadcast's shared timeline, so `textoverlay` and
/// `subtitleoverlay` show it with the picture it was published with.
///
/// A cue is a group: its text, then (when the publisher knew it) an empty frame at its end. The
/// pad holds a cue until its end is known (that frame, or the next cue; at most
/// ``longestCueUs``) and pushes it with its duration: an overlay without a duration would keep
/// the text until the next cue and block on it. Between cues, GAP events follow the media pushed
/// on the other pads, so an overlay waiting for text never holds the picture back. The stream is
/// sparse (``SideTrackPad``).
final class CaptionPad: SideTrackPad, @unchecked Sendable {
    /// The caps of the pad.
    static let caps = "text/x-raw, format=(string)utf8"
    /// How long a cue without an end shows, at most (µs).
    static let longestCueUs: UInt64 = 5_000_000

    /// Cues pushed (for the tests and the log).
    let cues = Atomic<UInt64>(0)

    // Streaming-thread state.
    /// The cue read and not pushed yet: its text, group, start and (once known) end, publisher µs.
    private var held: (text: Bytes, group: UInt64, startUs: UInt64, endUs: UInt64?)?
    /// Running time the text stream has covered (buffers and GAPs), ns.
    private var coveredNs: UInt64 = 0

    init(pad: UnsafeMutablePointer<GstPad>, name: String, trackName: String, src: MoqSrc) {
        // Read raw: the reader drops hang's end-of-group frames, which end cues here.
        super.init(pad: pad, name: name, trackName: trackName, caps: Self.caps, raw: true, src: src)
    }

    override func subscribed() { held = nil }

    override func step(_ src: MoqSrc, generation: UInt64) {
        guard prepareStep(src), let reader else {
            wake.wait(since: generation, timeoutNs: 50_000_000)
            return
        }
        switch reader.next(waitingUpTo: 50_000_000) {
        case .idle, .malformed:
            if let held {
                if let end = held.endUs {
                    pushHeld(endUs: end, src: src)  // Waiting for the media's timeline.
                } else if let edge = mediaEdgeUs(src), edge > held.startUs &+ Self.longestCueUs {
                    pushHeld(endUs: held.startUs &+ Self.longestCueUs, src: src)
                }
            }
            coverGap(src: src)
        case .ended:
            if let held { pushHeld(endUs: held.endUs ?? held.startUs &+ Self.longestCueUs, src: src) }
            trackEnded()
        case .failed(let error):
            if case .cancelled = error { return }
            src.reporter.log(GST_LEVEL_INFO, "\(name): caption track \(trackName) ended: \(error)")
            dropSubscription()
        case .frame(let frame):
            take(frame, src: src)
        }
    }

    private func take(_ frame: MediaFrame, src: MoqSrc) {
        // Read raw: the reader drops hang's end-of-group frames, which end cues here.
        guard let legacy = try? LegacyFrame(decoding: frame.payload) else {
            src.reporter.log(GST_LEVEL_DEBUG, "\(name): frame of group \(frame.group) is not a legacy frame: skipped")
            return
        }
        let isEnd = legacy.isEndOfGroup || legacy.payload.isEmpty
        if let held, held.endUs == nil {
            // Its end marker, or the next cue: either ends it.
            pushHeld(endUs: max(legacy.timestamp, held.startUs), src: src)
            if frame.group == held.group && isEnd { return }
        }
        guard !isEnd else { return }
        // A cue still waiting for the timeline when the next one came is past: replaced.
        held = (legacy.payload, frame.group, legacy.timestamp, nil)
    }

    /// Pushes the held cue, ending at `endUs`; keeps it (with its end) while the media has not
    /// placed the timeline yet.
    private func pushHeld(endUs: UInt64, src: MoqSrc) {
        guard let cue = held else { return }
        let epoch = source?.epoch
        guard let start = src.playout?.runningTime(ofUs: cue.startUs, epoch: epoch),
            let end = src.playout?.runningTime(ofUs: endUs, epoch: epoch)
        else {
            held?.endUs = endUs
            return
        }
        held = nil
        let bytes = cue.text
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return }
        _ = bytes.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize(bytes.count)) }
        swiftmoq_buffer_set_pts(buffer, StreamEvents.pts(running: Int64(clamping: start)))
        swiftmoq_buffer_set_duration(buffer, GstClockTime(end > start ? end - start : 0))
        if discont {
            swiftmoq_buffer_set_flags(buffer, GST_BUFFER_FLAG_DISCONT.rawValue)
            discont = false
        }
        coveredNs = max(coveredNs, end)
        cues.add(1, ordering: .relaxed)
        push(buffer, src: src)
    }

    /// Where the media pushed so far reaches (publisher µs): the newest frame on the other pads.
    private func mediaEdgeUs(_ src: MoqSrc) -> UInt64? {
        let pushed = [MediaKind.video, .audio].compactMap { src.run?.pads[$0]?.lastPushedUs.load(ordering: .relaxed) }
            .filter { $0 > 0 }
        return pushed.max()
    }

    /// A GAP up to the media pushed so far (less a held cue's start): an overlay waiting for text
    /// lets the picture through.
    private func coverGap(src: MoqSrc) {
        guard var edgeUs = mediaEdgeUs(src) else { return }
        if let held { edgeUs = min(edgeUs, held.startUs) }
        guard let edge = src.playout?.runningTime(ofUs: edgeUs, epoch: source?.epoch), edge > coveredNs else { return }
        gst_pad_push_event(
            pad,
            gst_event_new_gap(StreamEvents.pts(running: Int64(clamping: coveredNs)), GstClockTime(edge - coveredNs)))
        coveredNs = edge
    }
}

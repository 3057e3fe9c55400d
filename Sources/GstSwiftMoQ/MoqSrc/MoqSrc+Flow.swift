// SPDX-License-Identifier: MIT
import CGStreamer
import MoqSync
import Synchronization

/// The pads' flow returns combined, as GStreamer's demuxers combine theirs (GstFlowCombiner): a
/// pad whose downstream returned EOS stops pushing, and once every media pad that is linked has
/// (`pngenc snapshot=true`, a `filesink` after a fixed number of buffers), every pad pushes EOS,
/// so the pipeline ends and files are finalised. When nothing is linked to any pad for a while
/// after the pads were all added, the element says so with an ERROR and ends its streams, as a
/// source whose push returns NOT_LINKED does.
extension MoqSrc {
    /// How long every media pad may go unlinked (after `no-more-pads`) before it is an error:
    /// decodebin links its branches a moment after the pads appear.
    static let notLinkedGraceNs: UInt64 = 2_000_000_000

    /// A pad's push returned EOS or NOT_LINKED (any streaming thread).
    func combine(_ result: GstFlowReturn, from pad: PadTask) {
        guard let run else { return }
        let media = Array(run.pads.values)
        let flows = media.map(\.lastFlowReturn)
        let linked = flows.filter { $0 != GST_FLOW_NOT_LINKED }
        if !linked.isEmpty {
            notLinkedSince.withLock { $0 = nil }
            guard linked.allSatisfy({ $0 == GST_FLOW_EOS }) else { return }
            reporter.log(GST_LEVEL_INFO, "downstream returned EOS on every linked pad: ending every stream")
            endAllStreams(run)
            return
        }
        guard result == GST_FLOW_NOT_LINKED, padsComplete.load(ordering: .relaxed) else { return }
        let now = monotonicNow()
        let since = notLinkedSince.withLock { s -> UInt64 in
            if s == nil { s = now }
            return s ?? now
        }
        guard now >= since &+ Self.notLinkedGraceNs else { return }
        notLinkedSince.withLock { $0 = nil }
        reporter.error(
            .stream(GST_STREAM_ERROR_FAILED),
            "streaming stopped, reason not-linked: nothing is linked to any of "
                + media.map(\.name).joined(separator: ", ")
                + " (link video_%u or audio_%u, e.g. `moqsrc name=src src.video_0 ! decodebin ! autovideosink`)")
        endAllStreams(run)
    }

    private func endAllStreams(_ run: Running) {
        for pad in run.pads.values { pad.requestEOS() }
        for pad in run.dataPads.values { pad.requestEOS() }
        run.captionPad?.requestEOS()
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch
import MoqCatalog
import MoqMedia

/// The publisher's authority over the timeline, in long-form playback.
///
/// A publisher that moves to another item (moqsink's `item`: the next song, a skip) says in the
/// catalog (`swiftmoq.item`, `itemStartUs`) where it starts, and every track begins a group
/// there. A long-form player still playing what it buffered of the previous item jumps to that
/// group at once, as a seek would (flush, then the item's first group rendered right after now);
/// one that is already there, or playing live, goes on. A player joining mid-item starts at the
/// item rather than at what is left of the previous one in the relay's cache.
extension MoqSrc {
    /// How long the item's first group is waited for after the catalog announced it.
    static let itemGroupWaitMs = 3_000
    private static let itemPollMs = 20

    /// Control queue: a catalog snapshot arrived.
    func followPublisherItem(_ run: Running, catalog: HangCatalog) {
        guard let (item, startUs) = SwiftMoQExtension(catalog: catalog).timelineItem else { return }
        let previous = run.timelineItem
        run.timelineItem = item
        guard previous != item, longFormBufferMs != nil else { return }
        jumpToItem(item, startUs: startUs, waitedMs: 0)
    }

    /// Control queue: jumps once the item's first group is here (video's, at a keyframe).
    private func jumpToItem(_ item: UInt64, startUs: UInt64, waitedMs: Int) {
        guard let run, run.timelineItem == item else { return }
        let pads = run.pads.values.sorted { $0.kind == .video && $1.kind != .video }
        guard let lead = pads.first, let start = lead.groupStart(atOrAfter: startUs) else {
            guard waitedMs < Self.itemGroupWaitMs else {
                reporter.log(
                    GST_LEVEL_WARNING, "item \(item): its first group (at \(startUs) µs) never arrived; not jumping")
                return
            }
            control.asyncAfter(deadline: .now() + .milliseconds(Self.itemPollMs)) { [weak self] in
                self?.jumpToItem(item, startUs: startUs, waitedMs: waitedMs + Self.itemPollMs)
            }
            return
        }
        let position = pads.map(\.lastPushedTimestampUs).max() ?? 0
        guard position < start else {
            reporter.log(GST_LEVEL_DEBUG, "item \(item) starts at \(start) µs: already played past it")
            return
        }
        let request = SrcPad.SeekRequest(id: 1 << 40 | item, targetUs: start, seqnum: gst_util_seqnum_next())
        for pad in pads { pad.seek(request) }
        reporter.log(GST_LEVEL_INFO, "item \(item): jumping to its start at \(start) µs")
        events.post(
            "timeline.change",
            [
                ("item", .uint64(item)), ("position-us", .uint64(start)),
                ("skipped-ms", .double(position > 0 ? Double(start - position) / 1000 : 0)),
            ])
    }
}

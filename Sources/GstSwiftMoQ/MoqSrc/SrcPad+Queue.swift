// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback

/// A queue's next broadcast: prerolled while the current one plays, spliced in where it ends.
extension SrcPad {
    /// How long after the queue moved on the current track may still deliver its last frames.
    static let spliceWaitNs: UInt64 = 1_000_000_000

    func prepareUpcoming(_ prepared: Source?, src: MoqSrc) {
        if let current = upcoming, let prepared, current.source.same(as: prepared) { return }
        // Already playing it (the queue moved on before its preroll was handled): nothing to prepare.
        if let prepared, let source, source.session === prepared.session, source.broadcast == prepared.broadcast,
            source.trackName == prepared.trackName
        {
            return
        }
        upcoming?.remote.cancel()
        upcoming = nil
        upcomingDueNs = nil
        guard let prepared else { return }
        let (remote, reader) = subscribe(prepared, src: src)
        upcoming = (prepared, remote, reader, false)
        src.reporter.log(GST_LEVEL_INFO, "\(name): prerolling \(prepared.broadcast)/\(prepared.trackName)")
    }

    /// Posts `queue.preroll` once the next broadcast's first frame is here.
    func notePreroll(src: MoqSrc) {
        guard var next = upcoming, !next.prerolled, next.reader.liveEdgeUs != nil else { return }
        next.prerolled = true
        upcoming = next
        src.events.post(
            "queue.preroll", kind: kind, track: next.source.trackName,
            [("broadcast", .string(next.source.broadcast))])
    }

    /// Plays the prepared broadcast from here on: its first frame starts where the last frame
    /// pushed (on any pad) ends. Audio decides where (video's first frame waits for it: the
    /// playout holds it), since a gap or an overlap would be heard in it.
    func splice(src: MoqSrc) {
        guard let next = upcoming else { return }
        held = nil
        upcoming = nil
        upcomingDueNs = nil
        let previous = source
        remote?.cancel()
        draining?.remote.cancel()
        draining = nil
        source = next.source
        remote = next.remote
        reader = next.reader
        readerRef.withLock { $0 = next.reader }
        readyPosted = false
        eosSent = false
        counters.resetArrival()
        playout.splice(epoch: next.source.epoch)
        playout.reset(lane, .splice)
        startStream(next.source, src: src)
        startAdaptive(next.source)
        src.reporter.log(GST_LEVEL_INFO, "\(name): \(previous?.broadcast ?? "-") → \(next.source.broadcast)")
        src.queueAdvanced(to: next.source.broadcast)
        src.events.post(
            "queue.advance", kind: kind, track: next.source.trackName,
            [
                ("broadcast", .string(next.source.broadcast)), ("from", .string(previous?.broadcast ?? "")),
                ("prerolled", .bool(next.prerolled)),
            ])
    }
}

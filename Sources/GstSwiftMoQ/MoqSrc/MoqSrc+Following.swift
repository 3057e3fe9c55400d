// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch
import MoqCatalog
import MoqMedia
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// Following the broadcast: sessions, announcements, catalog snapshots and the pads they make (control queue).
extension MoqSrc {

    func sessionUp(_ session: MoqSession, handover: Bool) {
        guard let run else { return }
        run.follow?.cancel()
        // A GOAWAY handover: the relay and the publisher go on, so the timeline continues and
        // the pads skip what they already pushed. After a loss (a restarted relay or
        // publisher) it is a discontinuity.
        run.session = session
        run.sessionEpoch += 1
        // What was prerolled on the previous session is gone with it.
        run.upcoming = nil
        run.upcomingCatalog = nil
        for pad in run.pads.values { pad.prepare(nil) }
        let epoch = run.sessionEpoch
        if !handover {
            run.sourceEpoch += 1
            playout?.markDiscontinuity()
        }
        reporter.log(GST_LEVEL_INFO, "connected: looking for \(run.target)")
        readProbes(run, session: session)
        startFollowing(run, session: session, epoch: epoch)
    }

    /// The relay's PROBE reports (what it estimates it can send us): adaptive bitrate's hint.
    private func readProbes(_ run: Running, session: MoqSession) {
        run.probeTask?.cancel()
        probeReport.store(0, ordering: .relaxed)
        run.probeTask = Task { [weak self] in
            for await report in session.probes() {
                guard let self, !Task.isCancelled else { return }
                self.probeReport.store(report.bitrate, ordering: .relaxed)
            }
        }
    }

    private func startFollowing(_ run: Running, session: MoqSession, epoch: UInt64) {
        run.follow?.cancel()
        run.followGeneration += 1
        let generation = run.followGeneration
        let timeoutS = settings.withLock { $0.timeoutS }
        let timeout: Duration? = run.foundOnce || timeoutS == 0 ? nil : .seconds(Int64(timeoutS))
        let target = run.target
        run.follow = Task { [weak self] in
            for await event in BroadcastFollower.follow(session, target: target, timeout: timeout) {
                guard let self else { return }
                self.onControlQueue {
                    guard self.run?.followGeneration == generation else { return }
                    self.handle(event, session: session, epoch: epoch)
                }
            }
        }
    }

    /// `queue` changed while playing: the broadcast playing stays, the new list follows it.
    func queueChanged(_ items: [String]) {
        guard let run else { return }
        let valid = items.filter { item in
            guard let problem = BroadcastPath.validationError(item) else { return true }
            reporter.warning(.resource(GST_RESOURCE_ERROR_SETTINGS), "queue: '\(item)' left out: \(problem)")
            return false
        }
        let head: String
        switch run.target {
        case .prefix:
            reporter.warning(.resource(GST_RESOURCE_ERROR_SETTINGS), "queue is ignored in prefix mode")
            return
        case .exact(let b): head = run.broadcast ?? b
        case .queue(let old): head = run.broadcast ?? old.first ?? ""
        }
        run.target = valid.isEmpty ? .exact(head) : .queue([head] + valid)
        // What was prepared may no longer be next.
        run.upcoming = nil
        run.upcomingCatalog = nil
        for pad in run.pads.values { pad.prepare(nil) }
        reporter.log(GST_LEVEL_INFO, "queue: \(run.target)")
        guard let session = run.session else { return }
        startFollowing(run, session: session, epoch: run.sessionEpoch)
    }

    /// Whether the track of `path` ends the stream (EOS) when it finishes: the last broadcast to
    /// play. A prefix follow waits for the next announcement instead.
    func endsStream(_ run: Running, path: String) -> Bool {
        switch run.target {
        case .exact: true
        case .prefix: false
        case .queue(let items): items.last.map(BroadcastPath.normalize) == path
        }
    }

    private func handle(_ event: FollowEvent, session: MoqSession, epoch: UInt64) {
        guard let run, run.sessionEpoch == epoch else { return }
        switch event {
        case .upcoming(let path):
            // Another broadcast is next: what the pads prerolled for the previous one is dropped.
            if run.upcoming != path { for pad in run.pads.values { pad.prepare(nil) } }
            run.upcoming = path
            run.upcomingCatalog = nil
            reporter.log(GST_LEVEL_INFO, "next in the queue: \(path)")
        case .found(let path) where path == run.upcoming && run.upcomingCatalog != nil:
            adoptUpcoming(run, session: session)
        case .found(let path):
            if run.upcoming == path {
                // Its turn came before its catalog did: it plays as a new broadcast, unprepared.
                run.upcoming = nil
                run.upcomingCatalog = nil
                for pad in run.pads.values { pad.prepare(nil) }
            }
            if let previous = run.lastBroadcast, previous != path {
                // Another broadcast (prefix mode): another publisher clock, so a new timeline
                // after what was played.
                run.sourceEpoch += 1
                playout?.rejoin(newClock: true)  // long-form too: another timeline
            } else if run.broadcast != path {
                run.sourceEpoch += 1
                playout?.markDiscontinuity()
            }
            run.lastBroadcast = path
            run.broadcast = path
            run.foundOnce = true
            reporter.log(GST_LEVEL_INFO, "playing broadcast \(path)")
            reconcileData(run, session: session)
        case .catalog(let path, let catalog) where path == run.upcoming:
            run.upcomingCatalog = catalog
            prepareUpcoming(run, session: session)
        case .catalog(let path, let catalog):
            guard path == run.broadcast else { return }
            if run.upcomingCatalog != nil, dropsPlayedKind(run, catalog) {
                // The publisher took its finished tracks out of the catalog (moq-dev's does, before or
                // after the tracks' end reaches us): the broadcast is ending, and the queue's next one
                // is prerolled. It takes over; the pads splice it in as their tracks end.
                adoptUpcoming(run, session: session)
                return
            }
            run.catalog = catalog
            reconcile(run, session: session)
            followPublisherItem(run, catalog: catalog)
            reconcileData(run, session: session)
            followNowPlaying(run, session: session, catalog: catalog)
        case .malformedCatalog(let path, let error):
            reporter.warning(
                .stream(GST_STREAM_ERROR_DECODE),
                "the catalog of \(path) is malformed: \(error); keeping the previous catalog")
        case .catalogFailed(let path, let error):
            reporter.warning(.resource(GST_RESOURCE_ERROR_READ), "the catalog of \(path) is unavailable: \(error)")
        case .ended(let path) where path == run.upcoming:
            reporter.log(GST_LEVEL_INFO, "broadcast \(path) ended before its turn")
            run.upcoming = nil
            run.upcomingCatalog = nil
            for pad in run.pads.values { pad.prepare(nil) }
        case .ended(let path):
            reporter.log(GST_LEVEL_INFO, "broadcast \(path) ended")
            // A broadcast the queue already left (its tracks ended, the pads spliced on) changes nothing.
            guard run.broadcast == path else { return }
            run.broadcast = nil
            playout?.markDiscontinuity()
        case .notFound(let target):
            guard !run.foundOnce else { return }
            let url = run.connection.url.redacted
            // Over MoQ Transport an exact broadcast is also subscribed by name, unannounced.
            let missed = session.isIETF && target.exactPath != nil ? "neither announced nor served" : "not announced"
            reporter.error(
                .resource(GST_RESOURCE_ERROR_NOT_FOUND),
                "\(target) was \(missed) by \(url) within \(settings.withLock { $0.timeoutS }) s: check the name, "
                    + "and that the URL's path is the root it is published under (a broadcast room/cam published at "
                    + "moql://relay/anon is anon/room/cam at moql://relay/)")
        }
    }

    /// The queue moves on to the broadcast the pads have prerolled: it becomes the one played, and
    /// the pads splice it in where the previous one ends (no re-anchoring, no gap). Either the
    /// follower found it (the previous one was unannounced), or a pad already spliced it in (its
    /// track ended first): from then on, catalog updates of the previous broadcast (a publisher
    /// that removes its finished tracks) no longer touch the pads.
    private func adoptUpcoming(_ run: Running, session: MoqSession) {
        guard let path = run.upcoming, let catalog = run.upcomingCatalog else { return }
        run.sourceEpoch = max(run.sourceEpoch + 1, run.upcomingEpoch)
        run.lastBroadcast = path
        run.broadcast = path
        run.catalog = catalog
        run.upcoming = nil
        run.upcomingCatalog = nil
        reporter.log(GST_LEVEL_INFO, "playing broadcast \(path) (prerolled)")
        reconcile(run, session: session)
        reconcileData(run, session: session)
        followNowPlaying(run, session: session, catalog: catalog)
    }

    /// Whether `catalog` no longer offers a rendition for a kind a pad plays.
    private func dropsPlayedKind(_ run: Running, _ catalog: HangCatalog) -> Bool {
        let s = settings.withLock { $0 }
        let choice = RenditionChoice(
            catalog: catalog, video: run.selection[.video] ?? s.videoTrack, audio: run.selection[.audio] ?? s.audioTrack
        )
        return run.pads.keys.contains { ($0 == .video ? choice.video : choice.audio) == nil }
    }

    /// A pad spliced the queue's next broadcast in (its track of the current one ended).
    func queueAdvanced(to path: String) {
        onControlQueue { [self] in
            guard let run, run.upcoming == path, let session = run.session else { return }
            adoptUpcoming(run, session: session)
        }
    }

    /// The pads subscribe to the next broadcast of the queue (the renditions its catalog offers for
    /// their kinds) while the current one plays, so that it is prerolled when the current one ends.
    private func prepareUpcoming(_ run: Running, session: MoqSession) {
        guard let catalog = run.upcomingCatalog, let path = run.upcoming else { return }
        let s = settings.withLock { $0 }
        var choice = RenditionChoice(
            catalog: catalog, video: run.selection[.video] ?? s.videoTrack,
            audio: run.selection[.audio] ?? s.audioTrack)
        let ladder = videoLadder(run, choice: choice, settings: s)
        if let ladder {
            // The top within the caps: a step down follows within a second if the path cannot
            // carry it (a pad already playing keeps its rung).
            choice.video = ladder.ladder.rungs[AdaptiveBitrate.startingRung(ladder.ladder)].playable
        }
        run.upcomingEpoch = run.sourceEpoch + 1
        for (kind, wanted) in [(MediaKind.video, choice.video), (.audio, choice.audio)] {
            guard let pad = run.pads[kind] else { continue }
            guard let wanted else {
                pad.prepare(nil)
                continue
            }
            var source = SrcPad.Source(
                session: session, broadcast: path, rendition: wanted, epoch: run.upcomingEpoch,
                eosOnEnd: endsStream(run, path: path))
            source.finite = SwiftMoQExtension(catalog: catalog).isFinite
            pad.prepare(source)
        }
    }

    /// Pads follow the catalog: one per kind for the chosen renditions.
    func reconcile(_ run: Running, session: MoqSession) {
        guard let catalog = run.catalog, let broadcast = run.broadcast else { return }
        let s = settings.withLock { $0 }
        var choice = RenditionChoice(
            catalog: catalog, video: run.selection[.video] ?? s.videoTrack,
            audio: run.selection[.audio] ?? s.audioTrack)
        let ladder = videoLadder(run, choice: choice, settings: s)
        if let ladder {
            // The top within the caps: a step down follows within a second if the path cannot
            // carry it (a pad already playing keeps its rung).
            choice.video = ladder.ladder.rungs[AdaptiveBitrate.startingRung(ladder.ladder)].playable
        }
        if run.firstCatalogAt == nil { run.firstCatalogAt = monotonicNow() }
        run.waitingForNamed = kindsWaitingForTheirName(run, choice: choice)
        for skipped in choice.skipped { warnOnce(run, "\(broadcast): \(skipped)") }
        for kind in [MediaKind.video, .audio] where !run.waitingForNamed.contains(kind) {
            if let note = choice.missing[kind] { warnOnce(run, "\(broadcast): \(note)") }
        }
        publishCollection(run, choice: choice, broadcast: broadcast)
        let eosOnEnd = endsStream(run, path: broadcast)
        for (kind, wanted) in [(MediaKind.video, choice.video), (.audio, choice.audio)] {
            // Its named track may be listed in a moment: nothing rather than another rendition.
            if run.waitingForNamed.contains(kind) { continue }
            let existing = run.pads[kind]
            guard let wanted else {
                if let existing {
                    reporter.log(GST_LEVEL_INFO, "no \(kind) rendition to play any more: removing \(existing.name)")
                    remove(existing)
                    run.pads[kind] = nil
                }
                continue
            }
            var source = SrcPad.Source(
                session: session, broadcast: broadcast, rendition: wanted, epoch: run.sourceEpoch, eosOnEnd: eosOnEnd)
            source.finite = SwiftMoQExtension(catalog: catalog).isFinite
            if kind == .video, let ladder, ladder.adaptive { source.ladder = ladder.ladder }
            if let existing {
                existing.play(source)
            } else if let pad = createPad(kind, source: source) {
                run.pads[kind] = pad
            }
        }
        reconcileCaptions(run, session: session, catalog: catalog, broadcast: broadcast, eosOnEnd: eosOnEnd)
        noMorePadsWhenSettled(run, bothKinds: choice.video != nil && choice.audio != nil)
    }

    /// A `text_0` pad for the catalog's first caption rendition (removed when it leaves).
    private func reconcileCaptions(
        _ run: Running, session: MoqSession, catalog: HangCatalog, broadcast: String, eosOnEnd: Bool
    ) {
        let existing = run.captionPad
        guard let (name, _) = catalog.captions.first else {
            if let existing {
                reporter.log(GST_LEVEL_INFO, "no caption rendition any more: removing \(existing.name)")
                remove(existing)
                run.captionPad = nil
            }
            return
        }
        let source = SideTrackPad.Source(
            session: session, broadcast: broadcast, epoch: run.sourceEpoch, eosOnEnd: eosOnEnd)
        if let existing, existing.trackName == name { return existing.play(source) }
        if let existing { remove(existing) }
        guard let pad = gst_pad_new_from_template(MoqSrcType.textTemplate, "text_0") else { return }
        let captions = CaptionPad(pad: pad, name: "text_0", trackName: name, src: self)
        gst_pad_use_fixed_caps(pad)
        gst_pad_set_active(pad, 1)
        captions.play(source)
        captions.start()
        gst_element_add_pad(element, pad)
        run.captionPad = captions
        reporter.log(GST_LEVEL_INFO, "added text_0 for captions \(name)")
    }

    func remove(_ pad: CaptionPad) {
        pad.stop()
        gst_pad_set_active(pad.pad, 0)
        gst_element_remove_pad(element, pad.pad)
    }

    /// `no-more-pads` once the catalog has settled: at once when it has both kinds, else
    /// half a second after the first pad (publishers such as moqsink complete their catalog
    /// pad by pad as caps arrive, and gst-launch gives up delayed links at no-more-pads).
    private func noMorePadsWhenSettled(_ run: Running, bothKinds: Bool) {
        // A pad that waits for its named track comes later (the wait's end reconciles again).
        guard !run.noMorePads, !run.pads.isEmpty, run.waitingForNamed.isEmpty else { return }
        let now = monotonicNow()
        if run.firstPadAt == nil { run.firstPadAt = now }
        if bothKinds || now >= run.firstPadAt! + Self.padSettleNs {
            run.noMorePads = true
            padsComplete.store(true, ordering: .relaxed)
            reporter.log(GST_LEVEL_INFO, "no more pads")
            gst_element_no_more_pads(element)
        } else if !run.settleScheduled {
            run.settleScheduled = true
            control.asyncAfter(deadline: .now() + .nanoseconds(Int(Self.padSettleNs))) { [weak self, weak run] in
                guard let self, let run, self.run === run else { return }
                run.settleScheduled = false
                self.noMorePadsWhenSettled(run, bothKinds: false)
            }
        }
    }

    static let padSettleNs: UInt64 = 500_000_000

    /// Kinds asked for by a track name the catalog does not list yet, with no pad playing them,
    /// within ``namedTrackGraceNs`` of the first catalog: publishers such as moqsink list their
    /// tracks pad by pad as caps arrive, and a viewer that asked for `rear` should not see
    /// `front` first. Schedules the reconcile that ends the wait (then the fallback and its
    /// warning, as before).
    private func kindsWaitingForTheirName(_ run: Running, choice: RenditionChoice) -> Set<MediaKind> {
        let now = monotonicNow()
        let since = run.firstCatalogAt ?? now
        let waiting = Set(choice.missing.keys.filter { run.pads[$0] == nil })
        let until = since &+ Self.namedTrackGraceNs
        guard !waiting.isEmpty, now < until else { return [] }
        if !run.namedWaitScheduled {
            run.namedWaitScheduled = true
            control.asyncAfter(deadline: .now() + .nanoseconds(Int(until - now))) { [weak self, weak run] in
                guard let self, let run, self.run === run else { return }
                run.namedWaitScheduled = false
                if let session = run.session { self.reconcile(run, session: session) }
            }
        }
        return waiting
    }

    /// How long a track asked for by name may take to appear in the catalog before another
    /// rendition of its kind is played instead.
    static let namedTrackGraceNs: UInt64 = 1_500_000_000

    /// The ladder the video rendition is chosen from: every playable video rendition within the
    /// caps, when they are one (``BitrateLadder``) and nothing pins the choice (`video-track`, a
    /// stream selected with select-streams). `adaptive`: adaptive bitrate moves along it (`abr`,
    /// two rungs at least); with `abr` off, the caps still choose the top rung within them.
    private func videoLadder(_ run: Running, choice: RenditionChoice, settings s: Settings)
        -> (ladder: BitrateLadder, adaptive: Bool)?
    {
        let pinned = run.selection[.video] != nil || !(s.videoTrack ?? "").isEmpty
        guard !pinned, choice.video != nil, let ladder = BitrateLadder(choice.playable, cap: s.renditionCap) else {
            return nil
        }
        if s.abr { return (ladder, ladder.rungs.count >= 2) }
        return s.renditionCap == .none ? nil : (ladder, false)
    }

    func selectionChanged() {
        guard let run, let session = run.session else { return }
        reconcile(run, session: session)
    }

    private func warnOnce(_ run: Running, _ text: String) {
        guard run.warned.insert(text).inserted else { return }
        reporter.warning(.stream(GST_STREAM_ERROR_CODEC_NOT_FOUND), text)
    }

    /// `data-tracks`: a `data_%u` pad per name, reading it on the current session and broadcast.
    func reconcileData(_ run: Running, session: MoqSession) {
        guard let broadcast = run.broadcast else { return }
        let names = settings.withLock { $0.dataTracks }
        let eosOnEnd = endsStream(run, path: broadcast)
        let source = SideTrackPad.Source(
            session: session, broadcast: broadcast, epoch: run.sourceEpoch, eosOnEnd: eosOnEnd)
        for (index, name) in names.enumerated() {
            if let existing = run.dataPads[name] {
                existing.play(source)
                continue
            }
            let padName = "data_\(index)"
            guard let pad = gst_pad_new_from_template(MoqSrcType.dataTemplate, padName) else { continue }
            let dataPad = DataPad(pad: pad, name: padName, trackName: name, src: self)
            gst_pad_use_fixed_caps(pad)
            gst_pad_set_active(pad, 1)
            dataPad.play(source)
            dataPad.start()
            gst_element_add_pad(element, pad)
            run.dataPads[name] = dataPad
            reporter.log(GST_LEVEL_INFO, "added \(padName) for data track \(name)")
        }
    }

    func remove(_ pad: DataPad) {
        pad.stop()
        gst_pad_set_active(pad.pad, 0)
        gst_element_remove_pad(element, pad.pad)
    }

    private func createPad(_ kind: MediaKind, source: SrcPad.Source) -> SrcPad? {
        let name = "\(kind)_0"
        let template = kind == .video ? MoqSrcType.videoTemplate : MoqSrcType.audioTemplate
        guard let playout, let pad = gst_pad_new_from_template(template, name) else { return nil }
        let srcPad = SrcPad(
            pad: pad, kind: kind, name: name, src: self, playout: playout, latencyMs: latencyMs,
            longFormBufferMs: longFormBufferMs)
        pad.pointee.element_private = Unmanaged.passUnretained(srcPad).toOpaque()
        gst_pad_set_query_function_full(
            pad, { pad, parent, query in MoqSrcType.src(UnsafeMutableRawPointer(parent)).query(pad!, query!) }, nil,
            nil)
        gst_pad_set_event_function_full(
            pad, { pad, parent, event in MoqSrcType.src(UnsafeMutableRawPointer(parent)).padEvent(pad!, event!) },
            nil, nil)
        gst_pad_use_fixed_caps(pad)
        gst_pad_set_active(pad, 1)
        // stream-start, caps and segment before the pad appears, so pad-added handlers see its caps.
        srcPad.prime(source)
        srcPad.start()
        gst_element_add_pad(element, pad)
        reporter.log(GST_LEVEL_INFO, "added \(name) for \(source.trackName) (\(source.rendition.caps))")
        return srcPad
    }

    func remove(_ pad: SrcPad) {
        pad.stop()
        gst_pad_set_active(pad.pad, 0)
        pad.pad.pointee.element_private = nil
        gst_element_remove_pad(element, pad.pad)
    }
}

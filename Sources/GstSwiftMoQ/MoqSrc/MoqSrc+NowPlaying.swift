// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog
import MoqWire
import SwiftMoQ

/// What is playing, from the broadcast's now-playing track (``NowPlaying``, named in the catalog):
/// each new item becomes a TAG event on every pad (serialized with the data), a TAG message, and a
/// `now-playing` element message (title, artist, album, duration-ms, and the item's JSON).
extension MoqSrc {
    /// Control queue: a catalog snapshot arrived.
    func followNowPlaying(_ run: Running, session: MoqSession, catalog: HangCatalog) {
        guard let name = SwiftMoQExtension(catalog: catalog).nowPlayingTrack, let broadcast = run.broadcast else {
            return
        }
        let key = "\(ObjectIdentifier(session).hashValue)/\(broadcast)/\(name)"
        guard run.nowPlayingKey != key else { return }
        run.nowPlayingKey = key
        run.nowPlayingTask?.cancel()
        // The newest group is the current item; older ones are history.
        let remote = session.subscribe(
            broadcast: broadcast, track: name, range: SubscriptionRange(priority: 0, maxLatencyMs: 0))
        let consumer = remote.consumer(maxLatencyMs: 0)
        run.nowPlayingTask = Task { [weak self] in
            defer { remote.cancel() }
            do {
                for try await received in consumer.frames() {
                    guard let self, !Task.isCancelled else { return }
                    do {
                        self.nowPlayingChanged(try NowPlaying(json: received.frame.payload.array))
                    } catch {
                        self.reporter.log(
                            GST_LEVEL_WARNING, "a now-playing frame was not understood (\(error)): ignored")
                    }
                }
            } catch {}
        }
    }

    private func nowPlayingChanged(_ now: NowPlaying) {
        var fields: [(String, FieldValue)] = [("json", .string(String(decoding: now.jsonBytes(), as: UTF8.self)))]
        if let title = now.title { fields.append(("title", .string(title))) }
        if let artist = now.artist { fields.append(("artist", .string(artist))) }
        if let album = now.album { fields.append(("album", .string(album))) }
        if let ms = now.durationMs { fields.append(("duration-ms", .uint64(ms))) }
        if let art = now.artwork {
            fields.append(("artwork-mime-type", .string(art.mimeType)))
            fields.append(("artwork-bytes", .uint64(UInt64(art.data.count))))
        }
        events.post("now-playing", fields)
        let list = TagReading.makeList(now)
        for pad in run?.pads.values.map({ $0 }) ?? [] { pad.setPendingTags(list) }
        gst_element_post_message(
            element,
            gst_message_new_tag(UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), list))
    }
}

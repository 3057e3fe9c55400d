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

/// Streams: the GstStreamCollection of the catalog's renditions and `select-streams`.
extension MoqSrc {

    static func streamID(broadcast: String, track: String) -> String { "\(broadcast)/\(track)" }

    func publishCollection(_ run: Running, choice: RenditionChoice, broadcast: String) {
        let key = choice.playable.map { "\($0.rendition.name)|\($0.caps)" } + [broadcast]
        let selected = [choice.video?.rendition.name, choice.audio?.rendition.name]
        guard run.collectionKey != key + selected.map({ $0 ?? "" }) else { return }
        run.collectionKey = key + selected.map { $0 ?? "" }
        let collection = gst_stream_collection_new(broadcast)!
        for playable in choice.playable {
            let caps = gst_caps_from_string(playable.caps)
            let isSelected = selected.contains(playable.rendition.name)
            let stream = gst_stream_new(
                Self.streamID(broadcast: broadcast, track: playable.rendition.name), caps,
                playable.rendition.config.kind == .video ? GST_STREAM_TYPE_VIDEO : GST_STREAM_TYPE_AUDIO,
                isSelected ? GST_STREAM_FLAG_SELECT : GST_STREAM_FLAG_NONE)
            if let caps { gst_caps_unref(caps) }
            gst_stream_collection_add_stream(collection, stream)
        }
        run.replaceCollection(collection)  // Running owns the new reference; the message takes its own
        gst_element_post_message(
            element,
            gst_message_new_stream_collection(
                UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), collection))
    }

    /// The current stream collection (a new reference), for the pads' STREAM_COLLECTION event.
    func collection() -> UnsafeMutablePointer<GstStreamCollection>? {
        run?.referenceCollection()
    }

    /// The collection's stream for a pad's source (a new reference).
    func stream(for source: SrcPad.Source) -> UnsafeMutablePointer<GstStream>? {
        guard let collection = run?.referenceCollection() else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(collection)) }
        let id = Self.streamID(broadcast: source.broadcast, track: source.trackName)
        for i in 0..<gst_stream_collection_get_size(collection) {
            guard let stream = gst_stream_collection_get_stream(collection, i),
                let sid = gst_stream_get_stream_id(stream), String(cString: sid) == id
            else { continue }
            gst_object_ref(stream)
            return stream
        }
        return nil
    }

    /// `select-streams` (decodebin3/playbin3): plays the selected rendition of each kind.
    func sendEvent(_ event: UnsafeMutablePointer<GstEvent>) -> Bool {
        switch swiftmoq_event_type(event) {
        case GST_EVENT_SELECT_STREAMS: break
        case GST_EVENT_SEEK:
            defer { gst_event_unref(event) }
            return seek(event)
        case GST_EVENT_EOS:
            // gst-launch -e, or an application finishing a recording: every pad ends its stream.
            gst_event_unref(event)
            let pads = run?.pads.values.map { $0 } ?? []
            reporter.log(GST_LEVEL_INFO, "EOS requested: ending \(pads.count) streams")
            for pad in pads { pad.requestEOS() }
            for pad in run?.dataPads.values.map({ $0 }) ?? [] { pad.requestEOS() }
            run?.captionPad?.requestEOS()
            return true
        default:
            gst_event_unref(event)
            return false
        }
        var list: UnsafeMutablePointer<GList>?
        gst_event_parse_select_streams(event, &list)
        var ids: [String] = []
        var node = list
        while let n = node {
            if let p = n.pointee.data { ids.append(String(cString: p.assumingMemoryBound(to: CChar.self))) }
            node = n.pointee.next
        }
        g_list_free_full(list, g_free)
        gst_event_unref(event)
        let selected = ids
        onControlQueue { self.select(selected) }
        return true
    }

    private func select(_ ids: [String]) {
        guard let run, let catalog = run.catalog, let broadcast = run.broadcast, let session = run.session else {
            return
        }
        let playable = MediaFormat.playable(in: catalog).playable
        var selection: [MediaKind: String] = [.video: RenditionChoice.none, .audio: RenditionChoice.none]
        for id in ids {
            if let p = playable.first(where: { Self.streamID(broadcast: broadcast, track: $0.rendition.name) == id }) {
                selection[p.rendition.config.kind] = p.rendition.name
            } else {
                reporter.log(GST_LEVEL_WARNING, "select-streams: unknown stream \(id)")
            }
        }
        run.selection = selection
        reconcile(run, session: session)
        let current = run.referenceCollection()
        defer { if let current { gst_object_unref(UnsafeMutableRawPointer(current)) } }
        let message = gst_message_new_streams_selected(
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), current)
        for id in ids {
            if let p = playable.first(where: { Self.streamID(broadcast: broadcast, track: $0.rendition.name) == id }),
                let stream = stream(
                    for: SrcPad.Source(
                        session: session, broadcast: broadcast, rendition: p, epoch: 0, eosOnEnd: false))
            {
                gst_message_streams_selected_add(message, stream)
                gst_object_unref(stream)
            }
        }
        gst_element_post_message(element, message)
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqPipeline
import MoqTestKit
import SwiftMoQ
import Testing

/// Now playing: tags into moqsink become the broadcast's now-playing track; moqsrc turns it back
/// into tags and a message.
@Suite("now playing", .serialized, .timeLimit(.minutes(2)))
struct NowPlayingTests {
    @Test("tags into moqsink → the now-playing track → moqsrc's TAG events and now-playing messages, updated live")
    func tagsAcrossTheRelay() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try TestPipeline(
                "audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=1 "
                    + "! taginject name=tags tags=\"title=\\\"Song A\\\",artist=\\\"The Band\\\",album=First\" ! opusenc "
                    + "! moqsink \(relay.elementProperties) broadcast=radio")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            defer { publisher.setState(GST_STATE_NULL) }
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=radio s.audio_0 ! identity name=seen ! fakesink")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { player.setState(GST_STATE_NULL) }
            /// A message's text without GstStructure's escapes.
            func text(_ message: BusMessage) -> String {
                (message.structure ?? "").replacingOccurrences(of: "\\", with: "")
            }
            func nowPlaying(_ title: String) -> Bool {
                player.collected.contains {
                    $0.structureName == "now-playing" && text($0).contains("title=(string)\"\(title)\"")
                }
            }
            try await eventually("Song A", timeout: .seconds(20)) { nowPlaying("Song A") }
            let message = try #require(player.collected.last { $0.structureName == "now-playing" })
            #expect(text(message).contains("artist=(string)\"The Band\""))
            #expect(text(message).contains("album=(string)First"))
            // The next item: a new group of the track, at the player within a moment.
            let tags = publisher.element("tags")!
            defer { gst_object_unref(tags) }
            let changedAt = ContinuousClock.now
            setProperty(tags, "tags", "title=\"Song B\",artist=\"The Band\"")
            try await eventually("Song B", timeout: .seconds(10)) { nowPlaying("Song B") }
            print("now playing: the next title reached moqsrc after \(ContinuousClock.now - changedAt)")
            // And downstream, as a TAG event serialized with the audio (what decoders and sinks see).
            let seen = player.element("seen")!
            defer { gst_object_unref(seen) }
            let pad = gst_element_get_static_pad(seen, "sink")!
            defer { gst_object_unref(pad) }
            func downstreamTitle() -> String? {
                guard let event = gst_pad_get_sticky_event(pad, GST_EVENT_TAG, 0) else { return nil }
                defer { gst_event_unref(event) }
                var list: UnsafeMutablePointer<GstTagList>?
                gst_event_parse_tag(event, &list)
                var value: UnsafeMutablePointer<gchar>?
                guard let list, gst_tag_list_get_string(list, "title", &value) != 0, let value else { return nil }
                defer { g_free(value) }
                return String(cString: value)
            }
            try await eventually("the TAG event downstream", timeout: .seconds(5)) { downstreamTitle() == "Song B" }
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
        }
    }

    @Test("the now-playing JSON: artwork round-trips; hostile documents lose only what is wrong")
    func json() throws {
        let art = NowPlaying.Artwork(mimeType: "image/png", data: (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let item = NowPlaying(title: "Ünïcode \"quoted\"", artist: "A", album: nil, durationMs: 215_000, artwork: art)
        #expect(try NowPlaying(json: item.jsonBytes()) == item)
        let hostile =
            #"{"title": 7, "artist": "ok", "durationMs": -5, "artwork": {"mimeType": "image/png", "data": "!!!"}}"#
        let read = try NowPlaying(json: Array(hostile.utf8))
        #expect(read == NowPlaying(artist: "ok"))
        #expect(throws: CatalogError.self) { try NowPlaying(json: Array("[1, 2]".utf8)) }
        #expect(throws: CatalogError.self) { try NowPlaying(json: Array("{".utf8)) }
        let long = String(repeating: "x", count: 5000)
        #expect(try NowPlaying(json: NowPlaying(title: long).jsonBytes()).title?.utf8.count == NowPlaying.maxTextBytes)
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqInteropSupport
import MoqTestKit
import SwiftMoQ
import Testing

extension MoqSrcTests {
    @Test("long-form: a pipeline seek (one per sink, one seqnum) plays video from a keyframe and audio from there")
    func seekWithinTheBuffer() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "dvr")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let (player, video, audio) = try MoqSrcPlayer.start(
                "buffering=long-form buffer-duration=10000 \(relay.elementProperties) broadcast=dvr", sync: true)
            try await eventually("2.5 s of media", timeout: .seconds(20)) { video.count >= 75 && audio.count >= 125 }
            let (videoBefore, audioBefore) = (video.count, audio.count)
            let lastNs = try #require(video.entries.last?.publisherTime)
            // 1.5 s back: a key frame interval is 1 s, so the video group starts at most 1 s earlier.
            let targetNs = lastNs - 1_500_000_000
            let seeked = gst_element_seek(
                player.pipeline, 1.0, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, GST_SEEK_TYPE_SET, gint64(targetNs),
                GST_SEEK_TYPE_NONE, -1)
            #expect(seeked != 0)
            func jumped(_ buffers: [SeenBuffer], from index: Int) -> SeenBuffer? {
                buffers.dropFirst(index).first { ($0.publisherTime ?? .max) + 1_000_000_000 < lastNs }
            }
            try await eventually("the jump back", timeout: .seconds(5)) {
                jumped(video.entries, from: videoBefore) != nil && jumped(audio.entries, from: audioBefore) != nil
            }
            let firstVideo = try #require(jumped(video.entries, from: videoBefore))
            let firstAudio = try #require(jumped(audio.entries, from: audioBefore))
            let videoStart = try #require(firstVideo.publisherTime)
            #expect(!firstVideo.isDelta, "video after a seek starts at a keyframe")
            #expect(videoStart <= targetNs && videoStart + 1_100_000_000 > targetNs)
            // Audio starts where video does (the group holding the keyframe's time).
            let audioStart = try #require(firstAudio.publisherTime)
            #expect(audioStart >= videoStart && audioStart < videoStart + 30_000_000, "\(audioStart) vs \(videoStart)")
            try await eventually("a second after the seek", timeout: .seconds(5)) { audio.count >= audioBefore + 60 }
            #expect(statsField(player.element("s")!, "audio-underruns") == 0)
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }

    @Test("live playback refuses to seek (no buffer to seek in) and plays on")
    func liveRefusesSeek() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try Publish.pipeline(relay.elementProperties, broadcast: "live")
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            let player = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=live s.video_0 ! appsink name=v sync=true")
            let video = try player.record("v")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { video.stop() }
            try await eventually("playing", timeout: .seconds(20)) { video.count >= 10 }
            let seeked = gst_element_seek(
                player.pipeline, 1.0, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, GST_SEEK_TYPE_END, -1_000_000_000,
                GST_SEEK_TYPE_NONE, -1)
            #expect(seeked == 0)
            let count = video.count
            try await eventually("still playing", timeout: .seconds(5)) { video.count >= count + 10 }
            #expect(player.errors.isEmpty)
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }
}

extension MoqSrcTests {
    @Test("long-form: a finished broadcast (a file, not live) plays from its start, every frame, then EOS")
    func finiteBroadcastFromItsStart() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            // 5 s of audio read as fast as it goes (not live): moqsink has it all within a moment.
            let publisher = try TestPipeline(
                "audiotestsrc num-buffers=250 samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=1 ! "
                    + "opusenc frame-size=20 ! identity name=ap ! moqsink name=m \(relay.elementProperties) broadcast=file"
            )
            let published = PadRecorder(publisher.element("ap")!)
            #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
            try await eventually("the whole file published", timeout: .seconds(20)) { published.all.count >= 250 }
            try await Task.sleep(for: .milliseconds(300))  // the encoder's tail frame, which no count announces
            published.stop()
            let frames = published.all.count  // opusenc adds one for the tail
            // A deep buffer shorter than the file: a live broadcast would be joined 2 s before its end.
            let player = try TestPipeline(
                "moqsrc name=s buffering=long-form buffer-duration=2000 \(relay.elementProperties) broadcast=file "
                    + "s.audio_0 ! appsink name=a sync=true")
            let audio = try player.record("a")
            #expect(player.play() != GST_STATE_CHANGE_FAILURE)
            defer { audio.stop() }
            _ = try await player.waitFor(.seconds(20)) { $0.isEOS }
            let times = audio.entries.compactMap(\.publisherTime)
            let sent = published.all.compactMap(\.pts)
            #expect(times.count == frames, "received \(times.count) of \(frames) frames")
            #expect(times.first.map { $0 / 1000 } == sent.first.map { $0 / 1000 }, "played from the file's start")
            // The same timestamps as published (µs precision on the wire), every frame in order.
            #expect(times.map { $0 / 1000 } == sent.map { $0 / 1000 }, "every frame, in order")
            #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
            player.setState(GST_STATE_NULL)
            publisher.setState(GST_STATE_NULL)
        }
    }
}

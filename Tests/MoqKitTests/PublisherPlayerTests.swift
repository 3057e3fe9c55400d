// SPDX-License-Identifier: MIT
import Foundation
import MoqKit
import MoqTestKit
import SwiftMoQ
import Testing

@Suite("MoqKit Publisher and Player", .serialized, .timeLimit(.minutes(3)))
struct PublisherPlayerTests {
    static let small = VideoEncoderConfig(width: 320, height: 240, bitrate: 300_000, keyframeInterval: .seconds(1))

    @Test("publisher rules: tracks before start, published before start, single use")
    func singleUse() async throws {
        let publisher = Publisher()
        await #expect(throws: SessionError.invalidState("call session.publish(path:publisher:) before start()")) {
            try await publisher.start()
        }
        try publisher.addVideoTrack(source: TestPattern(), config: Self.small)
        #expect(throws: SessionError.invalidConfiguration("a track named \"video\" was already added")) {
            try publisher.addVideoTrack(source: TestPattern(), config: Self.small)
        }
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            try await session.publish(path: "rules", publisher: publisher)
            try await publisher.start()
            #expect(throws: SessionError.invalidState("tracks can only be added before start()")) {
                try publisher.addAudioTrack(source: TestPattern())
            }
            await #expect(throws: SessionError.invalidState("a publisher is single-use: it was already started")) {
                try await publisher.start()
            }
            publisher.stop()
            var states: [PublisherState] = []
            for await s in publisher.state { states.append(s) }
            #expect(states == [.idle, .publishing, .stopped])
            await session.close()
        }
    }

    @Test("a file played to its end stops the publisher by itself, after its track started (the end went unseen)")
    func fileEndStops() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moqkit-file-\(getpid()).mkv")
        defer { try? FileManager.default.removeItem(at: file) }
        try await TestMediaFile.matroska(at: file.path, width: 160, height: 90, frames: 30)
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let publisher = Publisher()
            try publisher.addVideoTrack(source: FileSource(path: file.path), config: Self.small)
            let events = Collected(publisher.events)
            try await session.publish(path: "file", publisher: publisher)
            try await publisher.start()
            var states: [PublisherState] = []
            for await s in publisher.state { states.append(s) }  // ends when the publisher stops: no stop() here
            #expect(states == [.idle, .publishing, .stopped])
            #expect(events.all.contains(.trackStarted("video")), "\(events.all)")
            await session.close()
        }
    }

    @Test("Publisher (test pattern, tone, data) → relay → Player: events in order, stats, decoded frames, data")
    func publishAndPlay() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            // Another application plays: what it reads comes through the relay.
            let viewer = Session(url: relay.url(), options: relay.sessionOptions)
            try await viewer.connect()
            let publisher = Publisher()
            let video = try publisher.addVideoTrack(source: TestPattern(pattern: "ball"), config: Self.small)
            try publisher.addAudioTrack(source: TestPattern(), config: AudioEncoderConfig(channels: 2))
            let chat = DataTrackEmitter()
            try publisher.addDataTrack(name: "chat", source: chat)
            let publisherEvents = Collected(publisher.events)
            try await session.publish(path: "studio/main", publisher: publisher)
            try await publisher.start()
            try await eventually("both media tracks started") {
                publisherEvents.all.filter { if case .trackStarted = $0 { return true } else { return false } }.count
                    >= 2
            }
            #expect(video.currentState == .active)

            let (broadcast, catalog) = try await viewer.firstCatalog(prefix: "studio") {
                !$0.playableAudioTracks.isEmpty && !$0.playableVideoTracks.isEmpty
            }
            #expect(broadcast.path == "main")
            let frames = SyncBox(0)
            let player = try Player(
                catalog: catalog,
                output: .callbacks(
                    video: { frame in
                        if frame.width == 320 && frame.height == 240 && frame.data.count == 320 * 240 * 3 / 2 {
                            frames.mutate { $0 += 1 }
                        }
                    }, audio: nil))
            let events = Collected(player.subscribeEvents())
            try await player.play()
            try await eventually("30 decoded frames", timeout: .seconds(45)) { frames.value >= 30 }
            try await eventually("stats", timeout: .seconds(20)) { player.stats.videoFps != nil }
            // Each Session shares its connection: the publisher's with its Publisher (moqsink), the
            // viewer's with its Player (moqsrc) — two connections, not four.
            #expect(relay.relay?.sessionCount == 2)

            let messages = broadcast.subscribeTrack(name: "chat")
            try await eventually("the chat subscription at the relay") {
                relay.relay?.origin.broadcast("anon/studio/main")?.existingTrack("chat")?.observerCount ?? 0 >= 1
            }
            chat.send(Data("hello".utf8))
            var received: String?
            for try await object in messages.objects {
                received = String(decoding: object.payload, as: UTF8.self)
                break
            }
            #expect(received == "hello")

            await player.pause()
            try await player.play()
            await player.stop()
            await events.finished()
            // Stopping the player left the viewer's shared connection open: its subscriptions go on.
            #expect(relay.relay?.sessionCount == 2)
            // The relay holds the chat track (the first subscription is open): a later subscriber gets
            // the newest group whether its SUBSCRIBE arrives before this send or after it.
            let later = broadcast.subscribeTrack(name: "chat")
            chat.send(Data("still here".utf8))
            var receivedLater: [String] = []
            for try await object in later.objects {
                receivedLater.append(String(decoding: object.payload, as: UTF8.self))
                if receivedLater.last == "still here" || receivedLater.count > 5 { break }
            }
            #expect(receivedLater.last == "still here", "\(receivedLater)")
            let names = events.all.map(\.name.rawValue)
            #expect(names.first == "playback.request", "\(names)")
            let order = [
                "playback.request", "track.subscribe.start", "track.ready", "playback.start", "playback.pause",
                "playback.resume", "playback.end", "player.destroy",
            ]
            var position = names.startIndex
            for name in order {
                guard let found = names[position...].firstIndex(of: name) else {
                    Issue.record("\(name) missing or out of order in \(names)")
                    break
                }
                position = found
            }
            publisher.stop()
            await viewer.close()
            await session.close()
        }
    }

    @Test(
        "a ladder in VideoEncoderConfig: renditions of one section; the Player plays the top adaptively, or a capped one"
    )
    func ladder() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let publisher = Publisher()
            var config = Self.small
            config.ladder = [
                .init(name: "hi", width: 320, height: 180, bitrate: 600_000),
                .init(name: "lo", width: 160, height: 90, bitrate: 150_000),
            ]
            let top = try publisher.addVideoTrack(source: TestPattern(pattern: "ball"), config: config)
            #expect(top.name == "video/hi")
            #expect(publisher.pipelineDescription == nil)
            try await session.publish(path: "ladder", publisher: publisher)
            let description = try #require(publisher.pipelineDescription)
            #expect(description.contains("keyframe-interval=1000") && description.contains("tee name=video_ladder"))
            try await publisher.start()
            let catalog = try await session.firstCatalog { $0.playableVideoTracks.count >= 2 }.catalog
            #expect(Set(catalog.videoTracks.map(\.name)) == ["video/hi", "video/lo"])
            for (cap, expected) in [(nil, "video/hi"), (300_000, "video/lo")] as [(Int?, String)] {
                let player = try Player(catalog: catalog, output: .headless, maxBitrate: cap)
                #expect(player.adaptive)
                #expect(!player.pipelineDescription.contains("video-track"))
                try await player.play()
                try await eventually("\(expected) playing", timeout: .seconds(30)) {
                    player.stats.videoTrack == expected && player.stats.videoFrames > 10
                }
                // Capped to one rung: nothing left to choose from.
                #expect((player.stats.adaptiveBitrate != nil) == (cap == nil))
                await player.stop()
            }
            // Pinned: one rendition, no adaptive bitrate.
            let pinned = try Player(catalog: catalog, videoTrackName: "video/lo", output: .headless)
            #expect(!pinned.adaptive && pinned.pipelineDescription.contains("abr=false"))
            publisher.stop()
            await session.close()
        }
    }

    @Test("one Session publishes and plays its own broadcast on one connection: read where it is made")
    func playOwnBroadcast() async throws {
        try await withTestRelay() { (relay) async throws in
            let session = Session(url: relay.url(), options: relay.sessionOptions)
            try await session.connect()
            let publisher = Publisher()
            try publisher.addVideoTrack(source: TestPattern(pattern: "ball"), config: Self.small)
            try await session.publish(path: "self/cam", publisher: publisher)
            try await publisher.start()
            // The relay does not announce a publisher's broadcast back to it: the session's own are merged in.
            let subscription = try await session.subscribe(prefix: "self")
            var broadcasts = subscription.broadcasts.makeAsyncIterator()
            let broadcast = try #require(await broadcasts.next())
            #expect(broadcast.path == "cam")
            let catalog = try #require(await broadcast.settledCatalog(timeout: .seconds(20)))
            let frames = SyncBox(0)
            let player = try Player(
                catalog: catalog, output: .callbacks(video: { _ in frames.mutate { $0 += 1 } }, audio: nil))
            try await player.play()
            try await eventually("10 decoded frames", timeout: .seconds(30)) { frames.value >= 10 }
            #expect(relay.relay?.sessionCount == 1)
            await player.stop()
            publisher.stop()
            await session.close()
        }
    }
}

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
        let relay = try TestRelay.start()
        defer { Task { await relay.stop() } }
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

    @Test("Publisher (test pattern, tone, data) → relay → Player: events in order, stats, decoded frames, data")
    func publishAndPlay() async throws {
        let relay = try TestRelay.start()
        defer { Task { await relay.stop() } }
        let session = Session(url: relay.url(), options: relay.sessionOptions)
        try await session.connect()
        let publisher = Publisher()
        let video = try publisher.addVideoTrack(source: TestPattern(pattern: "ball"), config: Self.small)
        try publisher.addAudioTrack(source: TestPattern(), config: AudioEncoderConfig(channels: 2))
        let chat = DataTrackEmitter()
        try publisher.addDataTrack(name: "chat", source: chat)
        let publisherEvents = Collected(publisher.events)
        try await session.publish(path: "studio/main", publisher: publisher)
        try await publisher.start()
        try await waitUntil("both media tracks started") {
            publisherEvents.all.filter { if case .trackStarted = $0 { return true } else { return false } }.count >= 2
        }
        #expect(video.currentState == .active)

        let subscription = try await session.subscribe(prefix: "studio")
        var broadcasts = subscription.broadcasts.makeAsyncIterator()
        let broadcast = try #require(await broadcasts.next())
        #expect(broadcast.path == "main")
        var catalogs = broadcast.catalogs().makeAsyncIterator()
        var catalog = try #require(await catalogs.next())
        while catalog.playableAudioTracks.isEmpty || catalog.playableVideoTracks.isEmpty {
            catalog = try #require(await catalogs.next())
        }
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
        try await waitUntil("30 decoded frames", timeout: .seconds(45)) { frames.value >= 30 }
        try await waitUntil("stats", timeout: .seconds(20)) { player.stats.videoFps != nil }

        let messages = broadcast.subscribeTrack(name: "chat")
        try await Task.sleep(for: .milliseconds(300))
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
        await session.close()
    }
}

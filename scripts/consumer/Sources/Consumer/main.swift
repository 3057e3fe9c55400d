// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqKit
import MoqPipeline
import SwiftMoQ

// What a new user of the package does: a relay in this process, a publisher (a test pattern),
// discovery, the catalog, headless playback and its statistics. Prints one line per step and
// exits non-zero when a step fails.

func fail(_ text: String) -> Never {
    print("consumer: FAILED: \(text)")
    exit(1)
}

func run() async throws {
    // The elements linked in, for pipelines of the user's own.
    SwiftMoQElements.register()
    let own = Pipeline(launch: "videotestsrc num-buffers=1 ! x264enc ! h264parse ! moqsink url=moql://127.0.0.1:9/x broadcast=b")
    try own.start(.null)
    own.stop()
    print("consumer: moqsink in a pipeline of its own")

    let relay = try MoqRelay.start(
        MoqRelay.Configuration(host: "127.0.0.1", port: 0, auth: RelayAuth(publicPrefixes: [""]), logger: .silent))
    let options = SessionOptions(tls: TLSOptions(fingerprint: relay.fingerprint))
    let session = Session(url: "moql://127.0.0.1:\(relay.port)/anon", options: options)
    try await session.connect()
    print("consumer: connected")

    let publisher = Publisher()
    try publisher.addVideoTrack(source: TestPattern(), config: VideoEncoderConfig(width: 320, height: 240))
    try await session.publish(path: "consumer/demo", publisher: publisher)
    try await publisher.start()

    // Another application watches: through the relay.
    let viewer = Session(url: "moql://127.0.0.1:\(relay.port)/anon", options: options)
    try await viewer.connect()
    var broadcasts = try await viewer.subscribe(prefix: "consumer").broadcasts.makeAsyncIterator()
    guard let broadcast = await broadcasts.next() else { fail("no broadcast announced") }
    print("consumer: discovered \(broadcast.path)")
    guard let catalog = await broadcast.settledCatalog(), let video = catalog.playableVideoTracks.first else {
        fail("no playable catalog")
    }
    print("consumer: catalog with \(video.name)")

    let player = try Player(catalog: catalog, targetBuffering: .milliseconds(150), output: .headless)
    try await player.play()
    let deadline = ContinuousClock.now + .seconds(20)
    while player.stats.videoFps == nil || player.stats.videoFps == 0 {
        if ContinuousClock.now > deadline { fail("no video played: \(player.stats)") }
        try await Task.sleep(for: .milliseconds(100))
    }
    print("consumer: playing, \(player.stats.videoFps ?? 0) fps")
    await player.stop()
    publisher.stop()
    await viewer.close()
    await session.close()
    await relay.shutdown(grace: .zero)
    print("consumer: ok")
}

try await run()

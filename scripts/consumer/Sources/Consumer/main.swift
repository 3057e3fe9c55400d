// SPDX-License-Identifier: MIT
import Foundation
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

    var broadcasts = try await session.subscribe(prefix: "consumer").broadcasts.makeAsyncIterator()
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
    await session.close()
    await relay.shutdown(grace: .zero)
    print("consumer: ok")
}

try await run()

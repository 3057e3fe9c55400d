// SPDX-License-Identifier: MIT
import MoqKit
import MoqTestKit
import SwiftMoQ
import Testing

/// A mono test tone published as `radio` by one Session, and its playable catalog as another
/// Session sees it: the setup of the tests that play audio long-form or switch its output.
struct RadioFixture {
    let relay: TestRelay
    let session: Session
    let viewer: Session
    let publisher: Publisher
    let catalog: Catalog

    static func start() async throws -> RadioFixture {
        let relay = try TestRelay.start()
        let (session, publisher) = try await publishTone(relay, path: "radio")
        let viewer = Session(url: relay.url(), options: relay.sessionOptions)
        try await viewer.connect()
        let catalog = try await playableAudioCatalog(viewer, prefix: "")
        return RadioFixture(relay: relay, session: session, viewer: viewer, publisher: publisher, catalog: catalog)
    }

    /// A mono test tone published as `path` by a Session of its own.
    static func publishTone(_ relay: TestRelay, path: String) async throws -> (Session, Publisher) {
        let session = Session(url: relay.url(), options: relay.sessionOptions)
        try await session.connect()
        let publisher = Publisher()
        try publisher.addAudioTrack(source: TestPattern(), config: AudioEncoderConfig(channels: 1))
        try await session.publish(path: path, publisher: publisher)
        try await publisher.start()
        return (session, publisher)
    }

    /// The first catalog with a playable audio track of the first broadcast `viewer` sees under `prefix`
    /// (a publisher completes its catalog as its encoders start).
    static func playableAudioCatalog(_ viewer: Session, prefix: String) async throws -> Catalog {
        try await viewer.firstCatalog(prefix: prefix) { !$0.playableAudioTracks.isEmpty }.catalog
    }

    /// A long-form player of the radio, and when each audio buffer reached the app (monotonic ns)
    /// with its publisher time (ms).
    func longFormPlayer(buffer: Duration = .seconds(8)) throws -> (
        player: Player, heard: SyncBox<[(at: UInt64, publisherMs: Int64)]>
    ) {
        let heard = SyncBox<[(at: UInt64, publisherMs: Int64)]>([])
        let player = try Player(
            catalog: catalog,
            output: .callbacks(
                video: nil,
                audio: { samples in
                    guard let time = samples.publisherTime else { return }
                    let ms = time.components.seconds * 1000 + time.components.attoseconds / 1_000_000_000_000_000
                    heard.mutate { $0.append((SystemClock().now(), ms)) }
                }),
            mode: .longForm(bufferDuration: buffer))
        return (player, heard)
    }

    /// Stops the publisher, closes both sessions, then the relay.
    func close() async {
        publisher.stop()
        await viewer.close()
        await session.close()
        await relay.stop()
    }
}

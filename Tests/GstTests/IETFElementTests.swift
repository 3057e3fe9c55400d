// SPDX-License-Identifier: MIT
import CGStreamer
import MoqInteropSupport
import MoqTestKit
import Testing

/// The elements over IETF MoQ Transport (`protocol=`): H.264 and Opus from moqsink to moqsrc through
/// moq-dev's relay with the two families mixed (it bridges a moq-lite side and an IETF one), and through
/// the Swift relay with both sides on one draft. hang's legacy container carries the timestamps, which
/// MoQ Transport objects do not.
///
/// With both sides on IETF through moq-dev's relay: its IETF side (moq-ffi 0.4.18) starts a subscriber that
/// joins a track it already holds after the object it holds (`{Largest.Group, Largest.Object + 1}`, the
/// draft's letter), so the player's joining FETCH brings the one-object catalog group (and the first
/// group's keyframe); without it the player got no catalog. See `ProtocolChoiceInteropTests.bothSides`.
@Suite("moqsink and moqsrc over IETF MoQ Transport", .serialized, .timeLimit(.minutes(3)), .peersStopped)
struct IETFElementTests {
    /// (moqsink's protocol, moqsrc's protocol, the versions each reports) through moq-dev's relay.
    static let mixed: [(String, String, String, String)] = [
        ("ietf", "auto", "moqt-16", "moq-lite-06"),
        ("moq-lite", "ietf-16", "moq-lite-06", "moqt-16"),
        ("ietf-14", "moq-lite", "moq-00", "moq-lite-06"),
        ("auto", "ietf-14", "moq-lite-06", "moq-00"),
    ]

    @Test(
        "moqsink → moq-dev's relay → moqsrc, one side over IETF: video and audio play with monotonic timestamps",
        arguments: mixed)
    func mixedThroughRust(sink: String, src: String, sinkVersion: String, srcVersion: String) async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        try await Self.play(
            "url=\(relay.url()) tls-fingerprint=\(relay.fingerprint)", sink: sink, src: src,
            versions: (sinkVersion, srcVersion))
    }

    @Test(
        "moqsink → moq-dev's relay → moqsrc, both over IETF on one draft: the catalog arrives by a joining FETCH, video and audio play",
        arguments: [("ietf-16", "moqt-16"), ("ietf-14", "moq-00")])
    func ietfThroughRust(choice: String, version: String) async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        try await Self.play(
            "url=\(relay.url()) tls-fingerprint=\(relay.fingerprint)", sink: choice, src: choice,
            versions: (version, version))
    }

    @Test(
        "moqsink → the Swift relay → moqsrc, both over IETF on one draft: video and audio play",
        arguments: [("ietf-16", "moqt-16"), ("ietf-14", "moq-00")])
    func ietfThroughSwift(choice: String, version: String) async throws {
        try await withTestRelay { relay in
            try await Self.play(relay.connectionProperties(), sink: choice, src: choice, versions: (version, version))
        }
    }

    /// Publishes the test pattern and tone with `protocol=sink` and plays them with `protocol=src`.
    static func play(_ connection: String, sink: String, src: String, versions: (String, String)) async throws {
        let name = RustPeer.uniqueName("ietf-media")
        let publisher = try Publish.pipeline("\(connection) protocol=\(sink)", broadcast: name)
        #expect(publisher.play() != GST_STATE_CHANGE_FAILURE)
        defer { publisher.setState(GST_STATE_NULL) }
        let (player, video, audio) = try MoqSrcPlayer.start("\(connection) protocol=\(src) broadcast=\(name)")
        defer { player.setState(GST_STATE_NULL) }
        try await eventually(
            "video and audio play", timeout: .seconds(30), detail: { "video \(video.count), audio \(audio.count)" }
        ) { video.count > 30 && audio.count > 30 }
        #expect(isMonotonic(video.entries), "video timestamps go backwards")
        #expect(isMonotonic(audio.entries), "audio timestamps go backwards")
        #expect(player.errors.isEmpty && publisher.errors.isEmpty, "\(player.errors) \(publisher.errors)")
        let sinkElement = try #require(publisher.element("m"))
        defer { gst_object_unref(sinkElement) }
        let srcElement = try #require(player.element("s"))
        defer { gst_object_unref(srcElement) }
        #expect(stringProperty(sinkElement, "moq-version") == versions.0)
        #expect(stringProperty(srcElement, "moq-version") == versions.1)
        #expect(stringProperty(srcElement, "protocol") == src)
    }

    @Test(
        "moqsink → moq-dev's relay → moqsrc over WebTransport (https://), both on IETF draft-16: video and audio play")
    func ietfOverWebTransport() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        try await Self.play(
            "url=https://127.0.0.1:\(relay.port)/anon tls-fingerprint=\(relay.fingerprint)", sink: "ietf-16",
            src: "ietf-16", versions: ("moqt-16", "moqt-16"))
    }

    @Test("protocol=ietf on a WebSocket URL is an ERROR that says to use moql:// or https://")
    func ietfNeedsQUIC() async throws {
        let player = try TestPipeline(
            "moqsrc name=s url=ws://127.0.0.1:1/anon protocol=ietf broadcast=b s.video_0 ! fakesink")
        _ = player.play()
        defer { player.setState(GST_STATE_NULL) }
        let error = try await player.waitFor(.seconds(10)) { $0.isError }
        #expect(error.text?.contains("moql://") == true, "\(error)")
    }
}

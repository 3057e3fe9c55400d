// SPDX-License-Identifier: MIT
// swift-tools-version:6.0
import PackageDescription

// `make build` sets SWIFTMOQ_STATIC_STDLIB=1 so that the GStreamer plugin
// carries the Swift runtime inside it (ldd lists no libswift*).
let staticStdlib = Context.environment["SWIFTMOQ_STATIC_STDLIB"] == "1"

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// The standard pkg-config names: a package that depends on this one builds with Debian's -dev
// packages alone. GLib's .pc files add -pthread, which SwiftPM warns about ("prohibited flag");
// the Makefile's builds read copies without it (scripts/pkgconfig-shadow.sh).
func gst(_ name: String, _ pc: String) -> Target {
    .systemLibrary(
        name: name, pkgConfig: pc,
        providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])])
}

let package = Package(
    name: "SwiftMoQ",
    products: [
        .library(name: "SwiftMoQ", targets: ["SwiftMoQ"]),
        .library(name: "MoqWire", targets: ["MoqWire"]),
        .library(name: "MoqModel", targets: ["MoqModel"]),
        .library(name: "MoqSession", targets: ["MoqSession"]),
        .executable(name: "swiftmoq", targets: ["swiftmoq"]),
        .executable(name: "moqbench", targets: ["moqbench"]),
        .library(name: "MoqPipeline", targets: ["MoqPipeline"]),
        .library(name: "MoqKit", targets: ["MoqKit"]),
        .library(name: "MoqTestKit", targets: ["MoqTestKit"]),
        // moqsrc and moqsink linked into an application (SwiftMoQElements.register()), no plugin installed.
        .library(name: "GstSwiftMoQ", targets: ["GstSwiftMoQ"]),
        // Product name must be gst<plugin>: GStreamer looks up gst_plugin_swiftmoq_get_desc.
        .library(name: "gstswiftmoq", type: .dynamic, targets: ["GstSwiftMoQPlugin"]),
    ],
    targets: [
        // MARK: - C libraries (wrapped once, never exposed in public API)
        .systemLibrary(
            name: "CNgtcp2", pkgConfig: "libngtcp2_crypto_gnutls",
            providers: [.apt(["libngtcp2-dev", "libngtcp2-crypto-gnutls-dev", "libgnutls28-dev"])]),
        gst("CGStreamer", "gstreamer-1.0"),
        gst("CGstBase", "gstreamer-base-1.0"),
        gst("CGstApp", "gstreamer-app-1.0"),
        .systemLibrary(name: "CGio", pkgConfig: "gio-2.0"),
        gst("CGstVideo", "gstreamer-video-1.0"),
        gst("CGstAudio", "gstreamer-audio-1.0"),
        gst("CGstPbutils", "gstreamer-pbutils-1.0"),
        gst("CGstCheck", "gstreamer-check-1.0"),

        // MARK: - Layers
        // The one lock type (pthread-based, so that ThreadSanitizer sees it: `make tsan`).
        .target(name: "MoqSync", swiftSettings: swiftSettings),
        // Byte views, hex, percent-encoding and a seeded generator: what every layer shares, nothing more.
        .target(name: "MoqBase", swiftSettings: swiftSettings),
        .target(name: "MoqWire", dependencies: ["MoqBase"], swiftSettings: swiftSettings),
        // Origins, broadcasts, tracks and their readers: what sessions serve and fill, with no protocol in it.
        .target(name: "MoqModel", dependencies: ["MoqSync", "MoqWire"], swiftSettings: swiftSettings),
        // moq-lite's session: the SETUP exchange and one handler per stream, sans-IO (no sockets, no timers of its own).
        .target(name: "MoqSession", dependencies: ["MoqSync", "MoqWire", "MoqModel"], swiftSettings: swiftSettings),
        // hang catalog JSON and the legacy frame container: pure Swift, fuzzed (Fuzz/FuzzCatalog).
        .target(name: "MoqCatalog", dependencies: ["MoqWire"], swiftSettings: swiftSettings),
        // IETF MoQ Transport (drafts 14 and 16): its own wire codec beside moq-lite's, on the same primitives.
        .target(name: "MoqtWire", dependencies: ["MoqBase", "MoqWire"], swiftSettings: swiftSettings),
        // Its session core: sans-IO like MoqSession's, on the same model and transport events.
        .target(
            name: "MoqtSession", dependencies: ["MoqSync", "MoqBase", "MoqWire", "MoqtWire", "MoqModel", "MoqSession"],
            swiftSettings: swiftSettings),
        // GStreamer caps <-> catalog renditions, through GStreamer's own codec utilities.
        // GStreamer wrapped once: one initialisation, owned caps and strings, GValue and structure writing.
        .target(name: "GstSupport", dependencies: ["CGStreamer"], swiftSettings: swiftSettings),
        .target(
            name: "MoqMedia",
            dependencies: [
                "GstSupport", "CGStreamer", "CGstBase", "CGstVideo", "CGstAudio", "CGstPbutils", "MoqBase",
                "MoqCatalog", "MoqWire",
            ],
            swiftSettings: swiftSettings),
        .target(name: "MoqQUIC", dependencies: ["MoqSync", "CNgtcp2", "MoqBase"], swiftSettings: swiftSettings),
        // WebTransport over HTTP/3 in Swift, sans-IO: HTTP/3 frames and SETTINGS, QPACK with the static table and
        // literals (Huffman decoded), the extended CONNECT, stream preambles, capsules (ARCHITECTURE: why not nghttp3).
        .target(name: "MoqWebTransport", dependencies: ["MoqBase", "MoqWire"], swiftSettings: swiftSettings),
        // qmux (QUIC frames over WebSocket or TCP, moq-lite's fallback where UDP is blocked): sans-IO framing.
        .target(name: "MoqQMux", dependencies: ["MoqBase", "MoqWire"], swiftSettings: swiftSettings),
        .target(
            name: "SwiftMoQ",
            dependencies: [
                "MoqSync", "MoqBase", "MoqWire", "MoqSession", "MoqQUIC", "MoqWebTransport", "MoqQMux", "MoqtWire",
                "MoqtSession",
            ],
            swiftSettings: swiftSettings),
        // Argument parsing and subcommand dispatch shared by swiftmoq and moqbench.
        .target(name: "MoqCommandLine", swiftSettings: swiftSettings),
        .executableTarget(
            name: "swiftmoq",
            dependencies: [
                "MoqCommandLine", "MoqSync", "SwiftMoQ", "MoqKit", "MoqPipeline", "MoqCatalog", "MoqMedia",
                "CGStreamer",
            ],
            swiftSettings: swiftSettings),
        // `make bench`: the Swift roles (publish, subscribe, fan-out load, GStreamer path) that
        // scripts/bench.py runs side by side with the Rust peer's (Tests/Interop/moqpeer.py bench-*).
        .executableTarget(
            name: "moqbench",
            dependencies: [
                "MoqCommandLine", "MoqSync", "SwiftMoQ", "MoqtWire", "MoqPipeline", "MoqTestKit", "MoqCatalog",
                "GstSwiftMoQ", "CGStreamer",
            ],
            swiftSettings: swiftSettings),
        // The Swift API in moq-kit's shape: Session, broadcasts and catalogs, Player, Publisher.
        // MPRIS 2 on D-Bus (GDBus from GIO, wrapped once here): media keys and desktop players.
        .target(name: "MoqMPRIS", dependencies: ["CGio", "MoqSync"], swiftSettings: swiftSettings),
        .target(
            name: "MoqKit",
            dependencies: [
                "MoqSync", "MoqMPRIS",
                "SwiftMoQ", "MoqSession", "MoqWire", "MoqCatalog", "MoqMedia", "MoqPipeline", "MoqPlayback",
                "GstSwiftMoQ", "GstSupport", "CGStreamer",
                "CGstApp", "CGstPbutils",
            ],
            swiftSettings: swiftSettings),
        // Playing a broadcast: following its catalog, reading tracks on plain threads, one timeline, stats.
        .target(
            name: "MoqPlayback",
            dependencies: ["MoqSync", "SwiftMoQ", "MoqSession", "MoqWire", "MoqCatalog", "MoqMedia"],
            swiftSettings: swiftSettings),
        .target(
            name: "GstSwiftMoQ",
            dependencies: [
                "MoqSync",
                "SwiftMoQ", "MoqCatalog", "MoqMedia", "MoqPlayback", "GstSupport", "CGStreamer", "CGstBase", "CGstApp",
                "CGstVideo",
                "CGstAudio", "CGstPbutils",
            ],
            swiftSettings: swiftSettings),
        .target(
            name: "GstSwiftMoQPlugin", dependencies: ["GstSwiftMoQ"], swiftSettings: swiftSettings,
            // FoundationEssentials' own static dependencies are not autolinked into a shared library.
            linkerSettings: staticStdlib
                ? [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims"])] : []),

        // A typed, declarative gst-launch builder that also runs what it builds.
        .target(
            name: "MoqPipeline", dependencies: ["MoqSync", "CGStreamer", "GstSupport"], swiftSettings: swiftSettings),
        // Pipeline test harness: in-process relay, UDP impairment proxy, appsrc/appsink, GstHarness, latency probe,
        // moqtestaudiosink (a GstAudioSink on an emulated sound card that measures the sine it renders).
        .target(
            name: "MoqTestKit",
            dependencies: [
                "MoqSync",
                "MoqBase", "MoqPipeline", "SwiftMoQ", "MoqQUIC", "MoqCatalog", "MoqKit", "GstSwiftMoQ", "GstSupport",
                "CGStreamer",
                "CGstApp",
                "CGstAudio",
                "CGstCheck",
            ],
            swiftSettings: swiftSettings),

        // MARK: - Plugins
        .plugin(
            name: "ElementDocs",
            capability: .command(
                intent: .custom(
                    verb: "element-docs", description: "Regenerate docs/elements.txt (gst-inspect of the elements)"),
                permissions: [.writeToPackageDirectory(reason: "writes docs/elements.txt")])),

        // MARK: - Tests
        .testTarget(name: "MoqWireTests", dependencies: ["MoqWire"], swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqtWireTests", dependencies: ["MoqtWire", "MoqWire", "MoqBase"], swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqQMuxTests", dependencies: ["MoqQMux", "MoqWire", "MoqBase"], swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqWebTransportTests", dependencies: ["MoqWebTransport", "MoqInteropSupport"],
            swiftSettings: swiftSettings),
        // The stateful session fuzzer's script (Fuzz/FuzzSession): libFuzzer runs it from `make fuzz`,
        // the session tests replay its corpus and every failure case it found.
        .target(
            name: "SessionFuzzHarness",
            dependencies: ["MoqWire", "MoqSession", "MoqWebTransport", "MoqtWire", "MoqtSession"],
            path: "Fuzz/FuzzSession/Harness",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqSessionTests",
            dependencies: [
                "MoqSync", "MoqBase", "MoqWire", "MoqSession", "SessionFuzzHarness", "MoqTestKit", "MoqtWire",
                "MoqtSession",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqQUICTests", dependencies: ["MoqBase", "MoqSync", "MoqQUIC", "MoqWire", "MoqTestKit"],
            exclude: ["rust_peer.py"],  // the Rust peer driver run by the interop tests, not a resource
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqCatalogTests", dependencies: ["MoqCatalog", "MoqWire", "MoqTestFixtures"],
            swiftSettings: swiftSettings),
        // Files of test data shared by test targets that have nothing else in common.
        .target(name: "MoqTestFixtures", path: "Tests/Fixtures", swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqMediaTests",
            dependencies: [
                "MoqMedia", "GstSupport", "MoqCatalog", "MoqWire", "CGStreamer", "CGstApp", "MoqTestFixtures",
            ],
            swiftSettings: swiftSettings),
        .testTarget(name: "SwiftMoQTests", dependencies: ["SwiftMoQ"], swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqPlaybackTests",
            dependencies: ["MoqBase", "MoqPlayback", "MoqCatalog", "MoqMedia", "MoqSession", "MoqWire", "SwiftMoQ"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqPipelineTests", dependencies: ["MoqPipeline", "GstSwiftMoQ", "CGStreamer"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqTestKitTests",
            dependencies: [
                "MoqTestKit", "MoqPipeline", "SwiftMoQ", "MoqKit", "MoqSync", "GstSwiftMoQ", "MoqInteropSupport",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "RelayTests",
            dependencies: ["MoqSync", "SwiftMoQ", "MoqQUIC", "MoqWebTransport", "MoqInteropSupport", "MoqTestKit"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MoqKitTests",
            dependencies: [
                "MoqKit", "MoqTestKit", "SwiftMoQ", "MoqSession", "MoqCatalog", "MoqWire", "MoqPipeline", "GstSwiftMoQ",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "GstTests",
            dependencies: [
                "MoqSync",
                "GstSwiftMoQ", "SwiftMoQ", "MoqCatalog", "MoqMedia", "MoqWire", "CGStreamer", "CGstCheck", "CGstApp",
                "MoqInteropSupport", "MoqTestKit", "MoqKit",
            ],
            swiftSettings: swiftSettings),
        // The Rust peer (moqpeer.py), the CLI runner and test helpers shared by test targets.
        .target(
            name: "MoqInteropSupport", dependencies: ["SwiftMoQ", "MoqSync"], path: "Tests/InteropSupport",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "FaultMatrixTests",
            dependencies: [
                "MoqTestKit", "MoqPipeline", "MoqSync", "SwiftMoQ", "MoqKit", "MoqInteropSupport", "GstSwiftMoQ",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "InteropTests",
            dependencies: [
                "MoqSync", "SwiftMoQ", "MoqSession", "MoqWire", "MoqQUIC", "MoqInteropSupport", "MoqTestKit",
                "MoqtWire", "MoqtSession",
            ],
            swiftSettings: swiftSettings),
    ],
    swiftLanguageModes: [.v6]
)

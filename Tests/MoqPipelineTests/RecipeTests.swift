// SPDX-License-Identifier: MIT
import Foundation
import GstSwiftMoQ
import MoqPipeline
import Testing

/// The repository's recipes (`pipelines/*.pipeline`), written with the builder: the rendered description
/// equals the file's (comments dropped, variables substituted, whitespace collapsed), and it parses.
@Suite("Pipeline builder: the repository's recipes")
struct RecipeTests {
    static let url = "moql://relay.example:4443/anon"
    static let fingerprint = String(repeating: "ab", count: 32)

    /// A recipe file as one line, with `${NAME}` substituted.
    static func recipe(_ name: String, _ variables: [String: String]) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var text = try String(
            contentsOf: root.appendingPathComponent("pipelines/\(name).pipeline"), encoding: .utf8)
        text = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.joined(separator: " ")
        for (key, value) in variables { text = text.replacingOccurrences(of: "${\(key)}", with: value) }
        return text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static let variables = [
        "MOQ_URL": url, "MOQ_BROADCAST": "room/cam", "MOQ_TLS": "tls-fingerprint=\(fingerprint)",
        "CAMERA": "/dev/video0", "CAMERA2": "/dev/video2", "MOQ_PLAYOUT": "", "MOQ_OUTPUT": "/tmp/recording.mkv",
    ]

    static var sink: Element {
        Element("moqsink", name: "moq").set("url", url).set("broadcast", "room/cam")
            .set("tls-fingerprint", fingerprint)
    }

    static let avc = Caps("video/x-h264", ["stream-format": "avc", "alignment": "au"])

    static let testPattern = Pipeline {
        sink
        Branch {
            Element("videotestsrc").set("is-live", true).set("pattern", "smpte")
            Caps("video/x-raw", ["width": 1280, "height": 720, "framerate": Fraction(30, 1)])
            Element("timeoverlay")
            Element("videoconvert")
            Caps("video/x-raw", ["format": "I420"])
            Element("x264enc").set("tune", "zerolatency").set("speed-preset", "veryfast").set("bitrate", 2000)
                .set("key-int-max", 60)
            Element("h264parse")
            avc
            Queue()
            Link(to: "moq", pad: "sink_0")
        }
        Branch {
            Element("audiotestsrc").set("is-live", true).set("wave", "sine").set("freq", 440)
            Caps("audio/x-raw", ["rate": 48000, "channels": 2])
            Element("audioconvert")
            Element("opusenc").set("bitrate", 96000)
            Queue()
            Link(to: "moq", pad: "sink_1")
        }
    }

    static let camera = Pipeline {
        sink
        camera("/dev/video0", pad: "sink_0")
        microphone(pad: "sink_1")
    }

    static func camera(_ device: String, pad: String) -> Branch {
        Branch {
            Element("v4l2src").set("device", device)
            Element("videoconvert")
            Element("videoscale")
            Caps("video/x-raw", ["width": 1280, "height": 720, "format": "I420"])
            Element("x264enc").set("tune", "zerolatency").set("speed-preset", "veryfast").set("bitrate", 2500)
                .set("key-int-max", 60)
            Element("h264parse")
            avc
            Queue()
            Link(to: "moq", pad: pad)
        }
    }

    static let multiCamera = Pipeline {
        sink.set("sink_0::track", "front").set("sink_1::track", "rear").set("sink_2::track", "mic")
        camera("/dev/video0", pad: "sink_0")
        camera("/dev/video2", pad: "sink_1")
        microphone(pad: "sink_2")
    }

    /// The ALSA microphone's branch of the camera recipes.
    static func microphone(pad: String) -> Branch {
        Branch {
            Element("alsasrc")
            Element("audioconvert")
            Element("audioresample")
            Caps("audio/x-raw", ["rate": 48000, "channels": 2])
            Element("opusenc").set("bitrate", 96000)
            Queue()
            Link(to: "moq", pad: pad)
        }
    }

    static let mic = Pipeline {
        sink
        Branch {
            Element("pulsesrc")
            Element("audioconvert")
            Element("audioresample")
            Caps("audio/x-raw", ["rate": 48000, "channels": 2])
            Tee(name: "mic") {
                Branch {
                    Queue()
                    Element("opusenc").set("bitrate", 96000)
                    Link(to: "moq", pad: "sink_1")
                }
                Branch {
                    Queue()
                    Element("wavescope").set("style", "lines")
                    Caps("video/x-raw", ["width": 640, "height": 360, "framerate": Fraction(15, 1)])
                    Element("videoconvert")
                    Caps("video/x-raw", ["format": "I420"])
                    Element("x264enc").set("tune", "zerolatency").set("speed-preset", "ultrafast")
                        .set("bitrate", 300).set("key-int-max", 30)
                    Element("h264parse")
                    avc
                    Link(to: "moq", pad: "sink_0")
                }
            }
        }
    }

    static var source: Element {
        Element("moqsrc", name: "src").set("url", url).set("broadcast", "room/cam").set("tls-fingerprint", fingerprint)
    }

    static let watch = Pipeline {
        source
        Branch {
            From("src", pad: "video_0")
            Queue()
            Element("decodebin")
            Element("videoconvert")
            Element("autovideosink")
        }
        Branch {
            From("src", pad: "audio_0")
            Queue()
            Element("decodebin")
            Element("audioconvert")
            Element("audioresample")
            Element("autoaudiosink")
        }
    }

    static let record = Pipeline {
        Element("moqsrc", name: "src").set("url", url).set("broadcast", "room/cam").set("catch-up", false)
            .set("tls-fingerprint", fingerprint)
        for (pad, parser) in [("video_0", "h264parse"), ("audio_0", "opusparse")] {
            Branch {
                From("src", pad: pad)
                Queue()
                Element(parser)
                Link(to: "mux")
            }
        }
        Branch {
            Element("matroskamux", name: "mux")
            Element("filesink").set("location", "/tmp/recording.mkv")
        }
    }

    static let all = [
        ("test-pattern", testPattern), ("camera", camera), ("multi-camera", multiCamera), ("mic", mic),
        ("watch", watch),
        ("record", record),
    ]

    @Test("each recipe renders to its file", arguments: all)
    func recipeMatches(name: String, pipeline: Pipeline) throws {
        #expect(pipeline.description == (try Self.recipe(name, Self.variables)))
    }

    @Test("every recipe parses and links (moqsink and moqsrc registered in-process)")
    func recipesParse() throws {
        SwiftMoQElements.register()
        var parsed: [String] = []
        for (name, pipeline) in Self.all {
            let needed = pipeline.description.split(separator: " ").compactMap { word -> String? in
                ["v4l2src", "alsasrc", "pulsesrc", "wavescope", "autovideosink", "autoaudiosink"].contains(word)
                    ? String(word) : nil
            }
            if needed.contains(where: { !GStreamer.hasElement($0) }) { continue }
            // NULL: parsed and linked, nothing opened (no camera or microphone needed).
            try pipeline.start(.null)
            pipeline.stop()
            parsed.append(name)
        }
        // These need only elements this package installs: they must always have parsed.
        #expect(parsed.contains("test-pattern") && parsed.contains("record"), "parsed: \(parsed)")
    }
}

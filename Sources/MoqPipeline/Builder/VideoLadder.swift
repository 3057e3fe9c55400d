// SPDX-License-Identifier: MIT

/// An adaptive-bitrate ladder in a chain of raw video: a `tee`, and for each rung a branch that
/// scales and encodes it (x264, no B-frames, a constrained VBV so that each group's size stays
/// close to its bitrate) into one of `moqsink`'s pads. With two video pads or more, moqsink asks
/// every encoder for keyframes at the same running times (its `keyframe-interval`), so the
/// renditions start their groups at the same frame; `key-int-max` here is only a backstop.
///
/// ```swift
/// let ladder = VideoLadder(sink: "moq", rungs: VideoLadder.Rung.camera720p)
/// Pipeline {
///     Element("moqsink", name: "moq").set("url", url).set("broadcast", "room/cam").naming(ladder)
///     Branch { Element("v4l2src"); Element("videoconvert"); ladder }
/// }
/// ```
public struct VideoLadder: PipelineComponent {
    /// One rendition.
    public struct Rung: Sendable, Hashable {
        /// The track name (`sink_N::track`).
        public var track: String
        public var width: Int
        public var height: Int
        /// Target bitrate in kbit/s (x264enc's unit).
        public var kbps: Int

        public init(track: String, width: Int, height: Int, kbps: Int) {
            self.track = track
            self.width = width
            self.height = height
            self.kbps = kbps
        }

        /// 3.5 / 1.2 / 0.4 Mbit/s at 720p, 360p and 180p.
        public static let camera720p = [
            Rung(track: "720p", width: 1280, height: 720, kbps: 3_500),
            Rung(track: "360p", width: 640, height: 360, kbps: 1_200),
            Rung(track: "180p", width: 320, height: 180, kbps: 400),
        ]
    }

    /// The tee's name.
    public var name: String
    /// The moqsink element's name.
    public var sink: String
    /// The first moqsink pad's number (`sink_N`); the rungs take the next ones.
    public var firstPad: Int
    public var rungs: [Rung]

    public init(name: String = "ladder", sink: String = "moq", firstPad: Int = 0, rungs: [Rung]) {
        self.name = name
        self.sink = sink
        self.firstPad = firstPad
        self.rungs = rungs
    }

    /// The moqsink properties that name the rungs' tracks (`sink_N::track`), in order.
    public var trackProperties: [(property: String, track: String)] {
        rungs.enumerated().map { ("sink_\(firstPad + $0.offset)::track", $0.element.track) }
    }

    public var nodes: [PipelineNode] {
        Tee(name: name, queueEachBranch: true) {
            for (i, rung) in rungs.enumerated() {
                Branch {
                    Element("videoscale")
                    Caps("video/x-raw", ["width": rung.width, "height": rung.height, "format": "I420"])
                    Element("x264enc").set("tune", .nick("zerolatency")).set("speed-preset", .nick("veryfast"))
                        .set("bitrate", rung.kbps).set("bframes", 0).set("key-int-max", 600)
                        .set("vbv-buf-capacity", 500)
                    Element("h264parse")
                    Caps("video/x-h264", ["stream-format": "avc", "alignment": "au"])
                    Queue()
                    Link(to: sink, pad: "sink_\(firstPad + i)")
                }
            }
        }.nodes
    }
}

extension Element {
    /// This moqsink with the track names of `ladder`'s rungs (`sink_N::track`).
    public func naming(_ ladder: VideoLadder) -> Element {
        ladder.trackProperties.reduce(self) { $0.set($1.property, $1.track) }
    }
}

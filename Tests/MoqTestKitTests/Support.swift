// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqTestKit

/// A broadcast name no other test uses.
func uniqueBroadcast(_ prefix: String) -> String { "test/\(prefix)-\(UInt32.random(in: 0...UInt32.max))" }

/// µs of a duration.
func micros(_ d: Duration) -> UInt64 {
    let (s, atto) = d.components
    return UInt64(s) * 1_000_000 + UInt64(atto / 1_000_000_000_000)
}

/// A small live H.264 publisher into `moqsink` (track `0.avc1`).
func h264Publisher(_ sink: Element) -> Pipeline {
    Pipeline {
        Element("videotestsrc").set("is-live", true)
        Caps("video/x-raw", ["format": "I420", "width": 160, "height": 120, "framerate": Fraction(30, 1)])
        Element("x264enc").set("tune", "zerolatency").set("speed-preset", "ultrafast").set("key-int-max", 15)
        Element("h264parse")
        Caps("video/x-h264", ["stream-format": "avc", "alignment": "au"])
        sink
    }
}

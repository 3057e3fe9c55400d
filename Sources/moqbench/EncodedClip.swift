// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqTestKit

/// A short H.264 clip encoded once by x264enc (ultrafast, zerolatency), kept in memory as access units
/// (avc, one per buffer) and looped by `gst-publish`: the publisher's CPU then measures the moq path,
/// and the encoder's own cost is reported apart.
struct EncodedClip: Sendable {
    /// Access units in decoding order; the first is a keyframe, and the clip is a whole number of GOPs.
    let samples: [Sample]
    /// Caps of the access units (with the avcC `codec_data`).
    let caps: String
    /// CPU s the encoding took (the whole process, while only the encoder ran).
    let encodeCPUSeconds: Double

    /// Total bytes.
    var bytes: Int { samples.reduce(0) { $0 + $1.bytes.count } }

    /// Encodes `frames` frames of a moving SMPTE pattern.
    static func encode(width: Int, height: Int, fps: Int, frames: Int, keyInterval: Int, bitrateKbps: Int)
        async throws(BenchError) -> EncodedClip
    {
        let pipeline = Pipeline {
            Element("videotestsrc").set("num-buffers", frames).set("pattern", .nick("smpte")).set(
                "horizontal-speed", 8)
            Caps(
                "video/x-raw",
                ["format": "I420", "width": width, "height": height, "framerate": Fraction(Int32(fps), 1)])
            Element("x264enc").set("speed-preset", .nick("ultrafast")).set("tune", .flags(["zerolatency"])).set(
                "key-int-max", keyInterval
            ).set("bitrate", bitrateKbps)
            Element("h264parse")
            Caps("video/x-h264", ["stream-format": "avc", "alignment": "au"])
            Element("appsink", name: "sink").set("sync", false)
        }
        let cpuBefore = Monotonic.processCPUSeconds()
        var samples: [Sample] = []
        do {
            try pipeline.start()
            let sink = try AppSink(pipeline, name: "sink")
            while let sample = try await sink.pull(timeout: Duration.seconds(60)) { samples.append(sample) }
        } catch {
            throw .runtime("encoding the clip: \(error)")
        }
        pipeline.stop()
        guard let caps = samples.first?.caps, !samples.isEmpty else { throw .runtime("the encoder produced nothing") }
        return EncodedClip(
            samples: samples, caps: caps, encodeCPUSeconds: Monotonic.processCPUSeconds() - cpuBefore)
    }
}

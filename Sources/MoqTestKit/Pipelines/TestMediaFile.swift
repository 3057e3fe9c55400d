// SPDX-License-Identifier: MIT
import MoqPipeline

/// Short media files for tests of file sources (`--source file:`, MoqKit's `FileSource`), written
/// by a GStreamer pipeline in this process: test-pattern H.264 and, if asked, an Opus tone, in
/// Matroska, as fast as the encoders go (not in real time).
public enum TestMediaFile {
    /// Writes `frames` frames of `width`×`height` H.264 at 30 fps (and as long an Opus tone when
    /// `audio`) into a Matroska file at `path`.
    public static func matroska(
        at path: String, width: Int, height: Int, frames: Int, audio: Bool = false
    ) async throws(TestKitError) {
        var description =
            "videotestsrc num-buffers=\(frames) ! video/x-raw,format=I420,width=\(width),height=\(height),framerate=30/1 "
            + "! x264enc ! h264parse ! matroskamux name=mux ! filesink location=\"\(path)\""
        if audio {
            // 1024-sample buffers at 48 kHz: as many as cover the video's duration.
            let buffers = frames * 48_000 / 30 / 1024 + 1
            description +=
                " audiotestsrc num-buffers=\(buffers) samplesperbuffer=1024 ! audio/x-raw,rate=48000 ! audioconvert "
                + "! opusenc ! mux."
        }
        let pipeline = Pipeline(launch: description)
        defer { pipeline.stop() }
        do {
            try pipeline.start()
            try await pipeline.waitForEOS(timeout: .seconds(60))
        } catch { throw .pipeline(error) }
    }
}

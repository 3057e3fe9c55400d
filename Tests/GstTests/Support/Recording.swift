// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqPipeline
import MoqTestKit

/// What decoding a Matroska recording back yielded.
struct DecodedRecording {
    var videoFrames: Int
    var audioBuffers: Int
    var errors: [BusMessage]
}

/// Plays a Matroska file to its end through `video` and `audio` decoders (gst-launch
/// fragments) and counts what comes out of each.
func decodeRecording(
    _ file: URL, video: String = "decodebin", audio: String = "decodebin"
) async throws -> DecodedRecording {
    let q = TestPipeline.unboundedQueue
    let reader = try TestPipeline(
        "filesrc location=\(file.path) ! matroskademux name=d "
            + "d.video_0 ! \(q) ! \(video) ! appsink name=v sync=false "
            + "d.audio_0 ! \(q) ! \(audio) ! appsink name=a sync=false")
    let videoSink = try reader.record("v")
    let audioSink = try reader.record("a")
    defer {
        videoSink.stop()
        audioSink.stop()
        reader.setState(GST_STATE_NULL)
    }
    guard reader.play() != GST_STATE_CHANGE_FAILURE else {
        throw TestKitError.expectationFailed("cannot play \(file.path)")
    }
    try await reader.waitFor { $0.isEOS || $0.isError }
    return DecodedRecording(videoFrames: videoSink.count, audioBuffers: audioSink.count, errors: reader.errors)
}

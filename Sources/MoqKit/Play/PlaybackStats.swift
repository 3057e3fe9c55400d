// SPDX-License-Identifier: MIT
import MoqPipeline

/// Stalls of one kind (moq-kit's `StallStats`).
public struct StallStats: Sendable, Equatable {
    /// Stalls so far.
    public var count: Int = 0
    /// Their total duration.
    public var totalDuration: Duration = .zero
}

/// Playback statistics over the last second (moq-kit's `PlaybackStats`, the fields that apply).
public struct PlaybackStats: Sendable, Equatable {
    /// Playout delay of the newest video frame (about the target latency when healthy).
    public var videoLatency: Duration?
    /// Playout delay of the newest audio frame.
    public var audioLatency: Duration?
    /// Video stalls.
    public var videoStalls = StallStats()
    /// Audio stalls.
    public var audioStalls = StallStats()
    /// Video bitrate, kbit/s.
    public var videoBitrateKbps: Double?
    /// Audio bitrate, kbit/s.
    public var audioBitrateKbps: Double?
    /// Time from play() to the first video frame.
    public var timeToFirstVideoFrame: Duration?
    /// Time from play() to the first audio frame.
    public var timeToFirstAudioFrame: Duration?
    /// Video frames per second.
    public var videoFps: Double?
    /// Video frames dropped (late groups, malformed frames).
    public var videoFramesDropped: Int = 0
    /// Audio frames dropped.
    public var audioFramesDropped: Int = 0
    /// Media buffered ahead of the video decoder.
    public var videoJitterBuffer: Duration?
    /// Media buffered ahead of the audio decoder.
    public var audioJitterBuffer: Duration?
    /// Reconnections so far.
    public var reconnects: Int = 0

    /// An empty record.
    public init() {}

    /// From a `moqsrc` `stats` structure.
    init(_ s: [String: PipelineValue]) {
        func ms(_ key: String) -> Duration? { s[key]?.doubleValue.map { .microseconds(Int64($0 * 1000)) } }
        videoLatency = ms("video-latency-ms")
        audioLatency = ms("audio-latency-ms")
        videoStalls = StallStats(
            count: Int(s["video-stalls"]?.intValue ?? 0), totalDuration: ms("video-stall-duration-ms") ?? .zero)
        audioStalls = StallStats(
            count: Int(s["audio-stalls"]?.intValue ?? 0), totalDuration: ms("audio-stall-duration-ms") ?? .zero)
        videoBitrateKbps = s["video-bitrate-kbps"]?.doubleValue
        audioBitrateKbps = s["audio-bitrate-kbps"]?.doubleValue
        timeToFirstVideoFrame = ms("time-to-first-video-frame-ms")
        timeToFirstAudioFrame = ms("time-to-first-audio-frame-ms")
        videoFps = s["video-fps"]?.doubleValue
        videoFramesDropped = Int(s["video-frames-dropped"]?.intValue ?? 0)
        audioFramesDropped = Int(s["audio-frames-dropped"]?.intValue ?? 0)
        videoJitterBuffer = ms("video-buffer-ms")
        audioJitterBuffer = ms("audio-buffer-ms")
        reconnects = Int(s["reconnects"]?.intValue ?? 0)
    }
}

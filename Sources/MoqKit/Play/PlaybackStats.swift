// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqPlayback

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
    /// Long-form: media received per second of wall time over the last second (1.0: real time;
    /// more while the buffer fills), per kind; nil before any.
    public var videoFillRate: Double?
    public var audioFillRate: Double?
    /// Frames that reached the pipeline after their render deadline (audible or visible gaps).
    public var videoUnderruns: Int = 0
    public var audioUnderruns: Int = 0
    /// Audio frames pushed so far (moqsrc's `audio-frames`).
    public var audioFrames: Int = 0
    /// Video frames pushed so far.
    public var videoFrames: Int = 0
    /// The latency mode in use (`adaptive`, `fixed`, `long-form`), the jitter margin the adaptive
    /// mode added, and how far the live edge plays behind its target now (nil before the join).
    public var latencyMode: String?
    public var latencyMargin: Duration?
    public var latencyExcess: Duration?
    /// Catch-up after stalls: audio frames dropped, and the time taken out in all.
    public var catchUpDrops: Int = 0
    public var catchUpTime: Duration = .zero
    /// The video track playing now (it changes when adaptive bitrate switches rendition).
    public var videoTrack: String?
    /// Adaptive bitrate (nil when it does not choose: one rendition, or a pinned track).
    public var adaptiveBitrate: AdaptiveBitrateStats?

    /// What adaptive bitrate did (moqsrc's `abr-*` statistics).
    public struct AdaptiveBitrateStats: Sendable, Equatable {
        /// What it estimates the path carries (bit/s).
        public var estimatedBitrate: Double
        /// How far the playing rendition's newest frame is behind.
        public var lateness: Duration
        public var switchesUp: Int
        public var switchesDown: Int
        /// Trials of a higher rendition that were abandoned.
        public var trialsFailed: Int
        /// Time spent on each rendition, by track name.
        public var timeOnRendition: [String: Duration]
    }

    /// An empty record.
    public init() {}

    /// From a `moqsrc` `stats` structure.
    init(_ s: [String: PipelineValue]) {
        func ms(_ key: String) -> Duration? { s[key]?.doubleValue.map { .microseconds(Int64($0 * 1000)) } }
        func int(_ key: String) -> Int { Int(s[key]?.intValue ?? 0) }
        typealias K = StatsKey.PerKind
        videoLatency = ms(K.latencyMs.name("video"))
        audioLatency = ms(K.latencyMs.name("audio"))
        videoStalls = StallStats(
            count: int(K.stalls.name("video")), totalDuration: ms(K.stallDurationMs.name("video")) ?? .zero)
        audioStalls = StallStats(
            count: int(K.stalls.name("audio")), totalDuration: ms(K.stallDurationMs.name("audio")) ?? .zero)
        videoBitrateKbps = s[K.bitrateKbps.name("video")]?.doubleValue
        audioBitrateKbps = s[K.bitrateKbps.name("audio")]?.doubleValue
        timeToFirstVideoFrame = ms(StatsKey.timeToFirstFrameMs("video"))
        timeToFirstAudioFrame = ms(StatsKey.timeToFirstFrameMs("audio"))
        videoFps = s[K.fps.name("video")]?.doubleValue
        videoFillRate = s[K.fillRate.name("video")]?.doubleValue
        audioFillRate = s[K.fillRate.name("audio")]?.doubleValue
        videoUnderruns = int(K.underruns.name("video"))
        audioUnderruns = int(K.underruns.name("audio"))
        videoFramesDropped = int(K.framesDropped.name("video"))
        audioFramesDropped = int(K.framesDropped.name("audio"))
        videoJitterBuffer = ms(K.bufferMs.name("video"))
        audioJitterBuffer = ms(K.bufferMs.name("audio"))
        reconnects = int(StatsKey.reconnects.rawValue)
        audioFrames = int(K.frames.name("audio"))
        videoFrames = int(K.frames.name("video"))
        latencyMode = s[StatsKey.latencyMode.rawValue]?.stringValue
        latencyMargin = ms(StatsKey.latencyMarginMs.rawValue)
        latencyExcess = ms(StatsKey.latencyExcessMs.rawValue)
        catchUpDrops = int(StatsKey.catchUpDrops.rawValue)
        catchUpTime = ms(StatsKey.catchUpMs.rawValue) ?? .zero
        videoTrack = s[K.track.name("video")]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        if s[StatsKey.abr.rawValue]?.boolValue == true {
            var times: [String: Duration] = [:]
            for pair in (s[StatsKey.abrRenditionMs.rawValue]?.stringValue ?? "").split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, let value = Int64(parts[1]) { times[String(parts[0])] = .milliseconds(value) }
            }
            adaptiveBitrate = AdaptiveBitrateStats(
                estimatedBitrate: (s[StatsKey.abrEstimateKbps.rawValue]?.doubleValue ?? 0) * 1000,
                lateness: ms(StatsKey.abrLatenessMs.rawValue) ?? .zero,
                switchesUp: int(StatsKey.abrSwitchesUp.rawValue),
                switchesDown: int(StatsKey.abrSwitchesDown.rawValue),
                trialsFailed: int(StatsKey.abrTrialsFailed.rawValue), timeOnRendition: times)
        }
    }
}

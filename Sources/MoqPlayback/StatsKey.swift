// SPDX-License-Identifier: MIT

/// The fields of the `stats` structure of `moqsrc` and `moqsink`, named once for both elements
/// and for MoqKit, which reads them (`PlaybackStats`, `PublisherStats`). A field both elements
/// have carries the same name and unit on both.
public enum StatsKey: String, Sendable, CaseIterable {
    /// The connection: `disconnected`, `connecting`, `connected`, `reconnecting`, `failed`.
    case status
    /// moqsrc: the broadcast playing.
    case broadcast
    /// Sessions opened again after a loss, and sessions replaced after GOAWAY.
    case reconnects
    case handovers
    /// The connection's smoothed round trip (ms, fractional).
    case roundTripTimeMs = "round-trip-time-ms"
    /// moqsink's round trip in µs, as it was named before `round-trip-time-ms` (kept for readers of it).
    case rttMicros = "rtt-us"
    case bytesSent = "bytes-sent"
    case bytesReceived = "bytes-received"
    case packetsLost = "packets-lost"
    /// moqsink: the congestion controller's send rate.
    /// What the connection receives (bit/s).
    case receiveRateBps = "recv-rate-bps"
    case sendRateBps = "send-rate-bps"
    /// moqsink: groups a subscriber or the link could not take (dropped or reset as old).
    case groupsDropped = "groups-dropped"
    /// moqsrc: its `latency` property.
    case targetLatencyMs = "target-latency-ms"
    case latencyMode = "latency-mode"
    case latencyMarginMs = "latency-margin-ms"
    /// moqsrc: how often the timeline moved forward.
    case retargets
    /// moqsrc: its `latency-mode` property (`auto`, `adaptive`, `fixed`); `latency-mode` is what
    /// playback uses (`adaptive`, `fixed`, or `long-form`).
    case latencyModeSetting = "latency-mode-setting"
    /// moqsrc: its `catch-up` property, whether it is taking time out now, the audio frames it
    /// dropped and the time it took out (ms) in all.
    case catchUp = "catch-up"
    case catchingUp = "catching-up"
    case catchUpDrops = "catch-up-drops"
    case catchUpMs = "catch-up-ms"
    /// moqsrc: how far ahead of its target latency the live edge plays now (ms).
    case latencyExcessMs = "latency-excess-ms"
    /// moqsrc: where the timeline stands (`joining`, `playing`, `checking-continuity`, `splicing`).
    case playoutPhase = "playout-phase"
    /// moqsrc: its `buffering` property (`live` or `long-form`).
    case buffering
    /// moqsrc: its `buffer-duration` property (ms), the deep budget of long-form playback.
    case bufferDurationMs = "buffer-duration-ms"

    /// moqsrc, adaptive bitrate: whether it chooses the video rendition now, what it estimates the
    /// path carries (kbit/s), how far the playing rendition's newest frame is behind (ms), its
    /// switches, the trials of a higher rendition that were abandoned, and the time spent on each
    /// rendition (`name=ms` pairs, comma-separated, e.g. `hd=12000,sd=3400`). The rendition playing
    /// is `video-track`.
    case abr
    case abrEstimateKbps = "abr-estimate-kbps"
    case abrLatenessMs = "abr-lateness-ms"
    case abrSwitchesUp = "abr-switches-up"
    case abrSwitchesDown = "abr-switches-down"
    case abrTrialsFailed = "abr-trials-failed"
    case abrRenditionMs = "abr-rendition-ms"

    /// moqsrc's per-kind fields, `<kind>-<field>` (`video-fps`, `audio-latency-ms`…).
    public enum PerKind: String, Sendable, CaseIterable {
        case track
        case latencyMs = "latency-ms"
        case fps
        case bitrateKbps = "bitrate-kbps"
        case frames
        case framesDropped = "frames-dropped"
        case groupsSkipped = "groups-skipped"
        case stalls
        case stallDurationMs = "stall-duration-ms"
        case bufferMs = "buffer-ms"
        /// Media received per second of wall time over the last second (1.0: real time; more
        /// while a long-form buffer fills).
        case fillRate = "fill-rate"
        /// Frames that reached the pad after their render deadline (an audible or visible gap).
        case underruns

        /// The field's name for `kind` (`video`, `audio`).
        public func name(_ kind: String) -> String { "\(kind)-\(rawValue)" }
    }

    /// moqsrc: time from start to the first frame of `kind` pushed (ms).
    public static func timeToFirstFrameMs(_ kind: String) -> String { "time-to-first-\(kind)-frame-ms" }

    /// moqsink's per-track structure fields.
    public enum PerTrack: String, Sendable, CaseIterable {
        case pad
        case frames
        case groups
        case bytes
        case framesDropped = "frames-dropped"
    }
}

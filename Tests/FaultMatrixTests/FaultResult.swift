// SPDX-License-Identifier: MIT

/// What one row of the fault matrix measured (written to `build/faults/results.json`).
struct FaultResult: Codable, Sendable {
    var name: String
    var relay: String
    var target: String
    /// Frames published in the measured window, and of those, played.
    var framesPublished: Int
    var framesPlayed: Int
    /// Played / published, in percent.
    var renderedPercent: Double
    /// Pauses in rendering longer than 100 ms: how many, and their share of the window.
    var stalls: Int
    var stallRatioPercent: Double
    /// Publish-to-render latency of played frames (ms).
    var latencyP50Ms: Double?
    var latencyP99Ms: Double?
    /// From the path's return to the first frame captured after it being rendered (ms).
    var recoveryMs: Double?
    /// From starting the player to its first rendered frame (ms).
    var timeToFirstFrameMs: Double?
    var publisherReconnects: Int
    var playerReconnects: Int
    /// ERROR messages on either pipeline, and the first of them.
    var errors: Int
    var firstError: String?
    /// Resident memory of the test process at the end (publisher, relay when Swift, and player).
    var rssMB: Double
    /// Datagrams the proxies dropped (both legs).
    var proxyDrops: Int
    /// The data track (``DataTrackProbe``): who read it, sequence numbers published in the window,
    /// how many of those arrived, and how many arrived more than once.
    var dataReader: String
    var dataSent: Int
    var dataDelivered: Int
    var dataRepeated: Int

    /// Delivered / sent, in percent.
    var dataDeliveredPercent: Double { dataSent == 0 ? 0 : 100 * Double(dataDelivered) / Double(dataSent) }
}

// SPDX-License-Identifier: MIT
public import FoundationEssentials

/// A decoded video frame handed to an app (I420).
public struct VideoFrame: Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Presentation time on the player's running time.
    public let pts: Duration?
    /// I420 planes, tightly packed as GStreamer lays them out.
    public let data: Data
    /// The publisher's timestamp of the frame (its media clock), when it travelled with it.
    public var publisherTime: Duration? = nil
}

/// Decoded audio handed to an app (interleaved 32-bit float).
public struct AudioSamples: Sendable {
    /// Samples per second.
    public let sampleRate: Int
    /// Channels.
    public let channels: Int
    /// Presentation time on the player's running time.
    public let pts: Duration?
    /// Interleaved F32LE samples.
    public let data: Data
    /// The publisher's timestamp of the first sample (its media clock), when it travelled with it.
    public var publisherTime: Duration? = nil
}

/// Where a ``Player`` renders.
public enum PlayerOutput: Sendable {
    /// A window and the speakers (`autovideosink`, `autoaudiosink`).
    case window
    /// Nowhere, at real-time pace (servers, tests, measuring).
    case headless
    /// A Matroska file, without re-encoding.
    case file(path: String)
    /// Decoded frames and PCM to the app.
    case callbacks(video: (@Sendable (VideoFrame) -> Void)?, audio: (@Sendable (AudioSamples) -> Void)?)
}

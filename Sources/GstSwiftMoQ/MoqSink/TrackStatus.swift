// SPDX-License-Identifier: MIT
import CGStreamer

/// What a `sink_%u` pad's track is doing (its `track-status` property, moq-gst's per-pad status).
enum TrackStatus: Int32, GEnumRepresentable {
    /// No caps yet, or the element is not running: nothing published.
    case waiting = 0
    /// In the broadcast (and its catalog), taking buffers.
    case publishing
    /// EOS reached: the track finished.
    case ended
    /// Refused its input (`track-error` says why); the other pads go on.
    case error

    var nick: String {
        switch self {
        case .waiting: "waiting"
        case .publishing: "publishing"
        case .ended: "ended"
        case .error: "error"
        }
    }

    var summary: String {
        switch self {
        case .waiting: "No caps yet (or the element is stopped): nothing published"
        case .publishing: "Published: in the broadcast and its catalog"
        case .ended: "EOS: the track finished"
        case .error: "The pad's input was refused (see track-error)"
        }
    }

    /// The GEnum behind `track-status`.
    static let gType: GType = registerGEnum("GstMoqTrackStatus")
}

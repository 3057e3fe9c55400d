// SPDX-License-Identifier: MIT
import CGStreamer

/// An element's state (`GstState`).
public enum PipelineState: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// No pending state (only ever a "pending" value).
    case voidPending = 0
    /// Nothing allocated.
    case null = 1
    /// Resources allocated, no data flow.
    case ready = 2
    /// Prerolled: sinks hold the first buffer, the clock does not run.
    case paused = 3
    /// Data flows and the clock runs.
    case playing = 4

    init(_ state: GstState) { self = PipelineState(rawValue: Int(state.rawValue)) ?? .voidPending }

    var gst: GstState { GstState(rawValue: UInt32(rawValue)) }

    /// Ordered from ``null`` to ``playing``.
    public static func < (a: PipelineState, b: PipelineState) -> Bool { a.rawValue < b.rawValue }

    /// GStreamer's name (`PLAYING`).
    public var description: String {
        switch self {
        case .voidPending: "VOID_PENDING"
        case .null: "NULL"
        case .ready: "READY"
        case .paused: "PAUSED"
        case .playing: "PLAYING"
        }
    }
}

/// How a successful state change went (`GstStateChangeReturn` other than failure).
public enum StateChange: Sendable, Hashable {
    /// Done.
    case success
    /// Under way; completion is announced by a state-changed message (see ``Pipeline/waitForState(_:timeout:)``).
    case async
    /// Done, and the pipeline is live: it cannot preroll in PAUSED.
    case noPreroll
}

// SPDX-License-Identifier: MIT

/// moqsrc's `latency-mode`: what `latency` means for live playback.
public enum LatencyMode: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// Adaptive, unless `latency` was set (then fixed): a pipeline that asks for a budget gets it.
    case auto = 0
    /// Render after the pipeline's own latency plus a jitter margin that starts at 0, grows by what
    /// frames at the live edge were late and shrinks again while the path is steady; `latency` is
    /// its ceiling.
    case adaptive = 1
    /// Render `latency` after the live edge, answered in the LATENCY query (as rtpjitterbuffer).
    case fixed = 2

    /// The GEnum nick.
    public var nick: String {
        switch self {
        case .auto: "auto"
        case .adaptive: "adaptive"
        case .fixed: "fixed"
        }
    }

    public var description: String { nick }

    /// The GEnum value's description.
    public var summary: String {
        switch self {
        case .auto: "Auto: adaptive, unless latency is set (then fixed)"
        case .adaptive:
            "Adaptive: render after the pipeline's own latency plus a jitter margin that starts at 0, grows by what a frame at the live edge was late (plus 10 ms) up to latency, and shrinks while the path is steady"
        case .fixed: "Fixed: render latency ms after the live edge (answered in the LATENCY query)"
        }
    }

    /// Whether live playback with this mode adapts its margin, given whether `latency` was set.
    public func isAdaptive(latencySet: Bool) -> Bool {
        switch self {
        case .auto: !latencySet
        case .adaptive: true
        case .fixed: false
        }
    }
}

/// moqsrc's `buffering`: live at the edge, or long-form behind it.
public enum Buffering: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// Play at the live edge; skip what is late.
    case live = 0
    /// Play `buffer-duration` behind the live edge (or from a finished broadcast's start), filled
    /// faster than real time, every frame played.
    case longForm = 1

    public var nick: String {
        switch self {
        case .live: "live"
        case .longForm: "long-form"
        }
    }

    public var description: String { nick }

    public var summary: String {
        switch self {
        case .live: "Live: play at the live edge, skip what is late"
        case .longForm:
            "Long-form: play buffer-duration behind the live edge (or from the start), fill faster than real time, never skip"
        }
    }
}

/// How one playback places frames in time: decided when it starts, from the element's settings.
public struct PlayoutPolicy: Sendable, Equatable {
    /// What a timeline does with time.
    public enum Mode: Sendable, Equatable {
        /// Live: `latencyNs` is in the pipeline's latency (LATENCY query), frames of the live
        /// edge are rendered that long after they arrive.
        case fixed
        /// Live with an adaptive margin of at most ``PlayoutPolicy/latencyNs`` (the LATENCY query
        /// answers 0; the margin lives in the timeline's offset).
        case adaptive
        /// Every frame played, from the first one received (long-form listening).
        case longForm
    }

    public var mode: Mode
    /// `latency`: the fixed budget, the adaptive margin's ceiling, or long-form's render delay (ns).
    public var latencyNs: UInt64
    /// Live playback returns to its target latency after a stall by dropping (see ``CatchUp``).
    public var catchUp: Bool

    public init(mode: Mode, latencyNs: UInt64, catchUp: Bool = true) {
        self.mode = mode
        self.latencyNs = latencyNs
        self.catchUp = catchUp && mode != .longForm
    }

    /// The policy of moqsrc's settings.
    public init(buffering: Buffering, latencyMode: LatencyMode, latencySet: Bool, latencyMs: UInt64, catchUp: Bool) {
        let mode: Mode =
            buffering == .longForm ? .longForm : latencyMode.isAdaptive(latencySet: latencySet) ? .adaptive : .fixed
        self.init(mode: mode, latencyNs: latencyMs &* 1_000_000, catchUp: catchUp)
    }

    public var isLive: Bool { mode != .longForm }

    /// What the LATENCY query answers (ns): the fixed budget and long-form's, 0 when adaptive (its
    /// margin lives in the offset, so that it can change without the pipeline reconfiguring).
    public var reportedLatencyNs: UInt64 { mode == .adaptive ? 0 : latencyNs }

    /// The stats' name of the mode.
    public var modeName: String {
        switch mode {
        case .fixed: "fixed"
        case .adaptive: "adaptive"
        case .longForm: "long-form"
        }
    }
}

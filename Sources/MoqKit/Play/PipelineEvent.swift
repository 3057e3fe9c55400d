// SPDX-License-Identifier: MIT
import MoqPipeline
public import MoqPlayback

/// One typed diagnostic from a ``Player``'s pipeline (moq-kit's `PipelineEvent`), for logging and
/// telemetry: read them from ``Player/diagnostics()``. Lifecycle milestones are ``PlayerEvent``s
/// and one-second figures ``PlaybackStats``; these are the per-frame and per-stall details.
public enum PipelineEvent: Sendable, Equatable, CustomStringConvertible {
    /// Media not played: which stage discarded it and why.
    case frameDropped(FrameDrop)
    /// A track stopped receiving frames for longer than its stall threshold.
    case stallStarted(kind: String, track: String, cause: StallCause)
    /// Frames flow again after a stall of `duration`.
    case stallEnded(kind: String, track: String, cause: StallCause, duration: Duration)
    /// About once a second per kind: how far behind the live edge it plays (`current`), the target
    /// (`target`, nil in long-form playback) and the buffered media ahead of playback (`buffer`).
    case latencySample(kind: String, current: Duration?, target: Duration?, buffer: Duration?)
    /// About once a second: what the connection receives and sends (bit/s).
    case bandwidthSample(receiveBps: UInt64?, sendBps: UInt64?)
    /// A track now plays another rendition (`track`): an adaptive switch or a chosen one.
    case renditionSwitched(kind: String, track: String)

    public var description: String {
        switch self {
        case .frameDropped(let d): "frameDropped(\(d))"
        case .stallStarted(let kind, let track, let cause): "stallStarted(\(kind) \(track), \(cause.rawValue))"
        case .stallEnded(let kind, let track, let cause, let duration):
            "stallEnded(\(kind) \(track), \(cause.rawValue), \(duration))"
        case .latencySample(let kind, let current, let target, let buffer):
            "latencySample(\(kind), current \(current.map { "\($0)" } ?? "-"), target \(target.map { "\($0)" } ?? "-"), buffer \(buffer.map { "\($0)" } ?? "-"))"
        case .bandwidthSample(let rx, let tx): "bandwidthSample(receive \(rx ?? 0) bit/s, send \(tx ?? 0) bit/s)"
        case .renditionSwitched(let kind, let track): "renditionSwitched(\(kind) → \(track))"
        }
    }
}

/// A discard of media: moq-kit's `frameDropped(stage, reason, ptsUs, groupSequence, count, bytes)`.
public struct FrameDrop: Sendable, Equatable, CustomStringConvertible {
    /// `video` or `audio`.
    public var kind: String
    /// The track it belonged to.
    public var track: String
    public var stage: DropStage
    public var reason: DropReason
    /// The frame's presentation time on the publisher's clock (µs), when one frame was dropped.
    public var ptsUs: UInt64?
    /// Its group, when known.
    public var groupSequence: UInt64?
    /// Frames (or, for ``DropReason/missingSequence``, groups) dropped at once.
    public var count: Int
    /// Payload bytes dropped (0 when they never arrived).
    public var bytes: Int

    public var description: String {
        "\(kind) \(track) \(stage.rawValue)/\(reason.rawValue) ×\(count)"
            + (groupSequence.map { " group \($0)" } ?? "") + (ptsUs.map { " pts \($0) µs" } ?? "")
    }
}

/// Where media was discarded (moq-kit's `DropStage`).
public typealias DropStage = MoqPlayback.DropStage

/// Why media was discarded (moq-kit's `DropReason`).
public typealias DropReason = MoqPlayback.DropReason

/// Why a track stalled (moq-kit's `StallCause`; the causes this player tells apart).
public enum StallCause: String, Sendable, CaseIterable {
    /// Nothing arrived from the network.
    case networkIdle = "network-idle"
}

extension PipelineEvent {
    /// The diagnostics a `moqsrc` element message carries (`moq-drop`, `track.stall.*`,
    /// `track.switch`, `stats`); empty for other messages.
    static func from(message name: String, fields: [String: PipelineValue]) -> [PipelineEvent] {
        let kind = fields["kind"]?.stringValue ?? ""
        let track = fields["track"]?.stringValue ?? ""
        func ms(_ key: String) -> Duration? { fields[key]?.doubleValue.map { .microseconds(Int64($0 * 1000)) } }
        switch name {
        case "moq-drop":
            guard let stage = fields["stage"]?.stringValue.flatMap(DropStage.init(rawValue:)),
                let reason = fields["reason"]?.stringValue.flatMap(DropReason.init(rawValue:))
            else { return [] }
            return [
                .frameDropped(
                    FrameDrop(
                        kind: kind, track: track, stage: stage, reason: reason,
                        ptsUs: fields["pts-us"]?.intValue.map { UInt64(clamping: $0) },
                        groupSequence: fields["group"]?.intValue.map { UInt64(clamping: $0) },
                        count: Int(fields["count"]?.intValue ?? 1), bytes: Int(fields["bytes"]?.intValue ?? 0)))
            ]
        case "track.stall.start":
            let cause = fields["cause"]?.stringValue.flatMap(StallCause.init(rawValue:)) ?? .networkIdle
            return [.stallStarted(kind: kind, track: track, cause: cause)]
        case "track.stall.end":
            return [.stallEnded(kind: kind, track: track, cause: .networkIdle, duration: ms("duration-ms") ?? .zero)]
        case "track.switch":
            return [.renditionSwitched(kind: kind, track: track)]
        case "stats":
            typealias K = StatsKey
            let longForm = fields[K.buffering.rawValue]?.stringValue == "long-form"
            let target = longForm ? nil : ms(K.targetLatencyMs.rawValue)
            var out: [PipelineEvent] = []
            for kind in ["video", "audio"] where fields[K.PerKind.track.name(kind)] != nil {
                out.append(
                    .latencySample(
                        kind: kind, current: ms(K.PerKind.latencyMs.name(kind)), target: target,
                        buffer: ms(K.PerKind.bufferMs.name(kind))))
            }
            let rx = fields[K.receiveRateBps.rawValue]?.intValue.map { UInt64(clamping: $0) }
            let tx = fields[K.sendRateBps.rawValue]?.intValue.map { UInt64(clamping: $0) }
            if rx != nil || tx != nil { out.append(.bandwidthSample(receiveBps: rx, sendBps: tx)) }
            return out
        default:
            return []
        }
    }
}

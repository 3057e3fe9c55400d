// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch
import GstSupport
import MoqCatalog
import MoqMedia
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// The `stats` structure (property and periodic message).
extension MoqSrc {

    func makeStats(name: String) -> UnsafeMutablePointer<GstStructure> {
        let run = self.run
        let stats = link.lastStats
        let now = monotonicNow()
        var fields: [(String, FieldValue)] = [
            (StatsKey.status.rawValue, .string(link.status.description)),
            (StatsKey.broadcast.rawValue, .string(run?.broadcast ?? "")),
            (StatsKey.reconnects.rawValue, .uint64(UInt64(run?.connection.reconnects ?? 0))),
            (StatsKey.handovers.rawValue, .uint64(UInt64(run?.connection.handovers ?? 0))),
            (StatsKey.roundTripTimeMs.rawValue, .double(Double(stats?.rttMicros ?? 0) / 1000)),
            (StatsKey.bytesReceived.rawValue, .uint64(stats?.bytesReceived ?? 0)),
            (StatsKey.receiveRateBps.rawValue, .uint64(link.connectedStats?.receiveRateBps ?? 0)),
            (StatsKey.packetsLost.rawValue, .uint64(stats?.packetsLost ?? 0)),
            (StatsKey.targetLatencyMs.rawValue, .uint64(latencyMs)),
        ]
        let settingsNow = settings.withLock { $0 }
        let playout = self.playout
        let clock = playingClock()
        let playoutNow = clock.flatMap { time -> PlayoutNow? in
            defer { gst_object_unref(time.clock) }
            return time.runningTime.map { PlayoutNow(runningNs: $0, monotonicNs: now) }
        }
        let snapshot = playout?.snapshot(now: playoutNow)
        fields += [
            (StatsKey.latencyMode.rawValue, .string(snapshot?.mode ?? settingsNow.policy.modeName)),
            (StatsKey.latencyModeSetting.rawValue, .string(settingsNow.latencyMode.nick)),
            (StatsKey.latencyMarginMs.rawValue, .double(snapshot?.marginMs ?? 0)),
            (StatsKey.catchUp.rawValue, .bool(playout?.policy.catchUp ?? settingsNow.policy.catchUp)),
            (StatsKey.catchingUp.rawValue, .bool(snapshot?.catchingUp ?? false)),
            (StatsKey.catchUpDrops.rawValue, .uint64(snapshot?.catchUpDrops ?? 0)),
            (StatsKey.catchUpMs.rawValue, .double(snapshot?.catchUpMs ?? 0)),
            (StatsKey.playoutPhase.rawValue, .string(snapshot?.phase ?? "stopped")),
        ]
        if let excess = snapshot?.excessMs { fields.append((StatsKey.latencyExcessMs.rawValue, .double(excess))) }
        fields += [
            (StatsKey.buffering.rawValue, .string(longFormBufferMs == nil ? "live" : "long-form")),
            (StatsKey.bufferDurationMs.rawValue, .uint64(longFormBufferMs ?? 0)),
        ]
        for kind in [MediaKind.video, .audio] {
            guard let pad = run?.pads[kind] else { continue }
            let s = pad.counters.snapshot(now: now)
            let k = kind.rawValue
            fields += [
                (StatsKey.PerKind.track.name(k), .string(pad.trackName ?? "")),
                (StatsKey.PerKind.latencyMs.name(k), .double(s.latencyMs)),
                (StatsKey.PerKind.fps.name(k), .double(s.fps)),
                (StatsKey.PerKind.bitrateKbps.name(k), .double(s.bitrateKbps)),
                (StatsKey.PerKind.frames.name(k), .uint64(s.frames)),
                (StatsKey.PerKind.framesDropped.name(k), .uint64(s.framesDropped)),
                (StatsKey.PerKind.groupsSkipped.name(k), .uint64(s.groupsSkipped)),
                (StatsKey.PerKind.stalls.name(k), .uint64(s.stalls)),
                (StatsKey.PerKind.stallDurationMs.name(k), .double(s.stallDurationMs)),
                (StatsKey.PerKind.bufferMs.name(k), .double(pad.bufferedMs ?? s.bufferMs)),
                (StatsKey.PerKind.fillRate.name(k), .double(s.fillRate)),
                (StatsKey.PerKind.underruns.name(k), .uint64(s.underruns)),
            ]
            if let first = s.timeToFirstFrameMs { fields.append((StatsKey.timeToFirstFrameMs(k), .double(first))) }
        }
        fields.append((StatsKey.retargets.rawValue, .uint64(UInt64(snapshot?.retargets ?? 0))))
        let adaptive = run?.pads[.video]?.adaptiveSnapshot
        fields.append((StatsKey.abr.rawValue, .bool(adaptive != nil)))
        if let adaptive {
            let times = adaptive.stats.timeOnRungNs.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value / 1_000_000)" }.joined(separator: ",")
            fields += [
                (StatsKey.abrEstimateKbps.rawValue, .double((adaptive.estimateBps ?? 0) / 1000)),
                (StatsKey.abrLatenessMs.rawValue, .double(adaptive.latenessMs)),
                (StatsKey.abrSwitchesUp.rawValue, .uint64(UInt64(adaptive.stats.switchesUp))),
                (StatsKey.abrSwitchesDown.rawValue, .uint64(UInt64(adaptive.stats.switchesDown))),
                (StatsKey.abrTrialsFailed.rawValue, .uint64(UInt64(adaptive.stats.trialsFailed))),
                (StatsKey.abrRenditionMs.rawValue, .string(times)),
            ]
        }
        return makeStructure(name, fields)
    }
}

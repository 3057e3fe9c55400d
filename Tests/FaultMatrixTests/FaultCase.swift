// SPDX-License-Identifier: MIT
import MoqTestKit

/// One row of the fault matrix: what happens to the path, on which leg, through which relay.
struct FaultCase: Sendable {
    /// Which relay sits between the publisher and the player.
    enum Relay: String, Sendable, Codable {
        case swift
        case rust
    }

    /// What happens once playback has warmed up.
    enum Event: Sendable {
        /// Impairments stay in force for the whole measured window.
        case steady
        /// Both legs go dark for `duration`, then the path returns.
        case blackhole(Duration)
        /// The relay is killed and restarted on the same port after `down`.
        case relayRestart(down: Duration)
        /// Both legs' NAT mappings change.
        case rebind
        /// The player leg's impairment changes at these times after the window starts.
        case playLegChanges([(after: Duration, impairment: Impairment)])
    }

    var name: String
    var relay: Relay = .swift
    /// Publisher → relay.
    var publishLeg: Impairment = .none
    /// Relay → player.
    var playLeg: Impairment = .none
    var event: Event = .steady
    /// The measured window after warm-up (the event happens at its start).
    var window: Duration = .seconds(12)
    /// x264's bitrate in kbit/s and the test pattern (snow does not compress: the bitrate is real).
    var videoKbps = 1_000
    /// A ladder instead (kbit/s, highest first): one source, an encoder per rung (640×360, 480×270,
    /// 320×180…), moqsink's keyframe grid; the player's adaptive bitrate chooses.
    var ladderKbps: [Int] = []
    var pattern = "ball"
    /// Who reads the data track.
    var dataReader: DataTrackProbe.Reader = .swift
    /// moqsrc's `latency`.
    var latencyMs = 300
    /// What the row must show, in words (printed beside the result).
    var target: String = ""

    /// The proxies' seed (the play leg's is one more): from the row's name, so that each row
    /// draws its own losses and a row replays the same way every run.
    var seed: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// The path returns this long after the window starts (for recovery time), if it ever left.
    var pathReturnsAfter: Duration? {
        switch event {
        case .steady, .rebind, .playLegChanges: nil
        case .blackhole(let d): d
        case .relayRestart(let d): d
        }
    }

    /// The ladder's row under a 2 Mbit/s cap.
    static let ladderCapRow = "ladder 3.5 / 1.2 / 0.4 Mbit/s under a 2 Mbit/s cap (player leg)"

    /// The row the first target is about.
    static let lossAndJitterRow = "5 % loss + 50±20 ms jitter, both legs"

    static let lossAndJitter = Impairment.loss(0.05).with(jitter: .milliseconds(20), around: .milliseconds(50))

    /// The matrix `make faults` runs.
    static let matrix: [FaultCase] = [
        FaultCase(name: "baseline", target: "reference"),
        FaultCase(
            name: lossAndJitterRow, publishLeg: lossAndJitter, playLeg: lossAndJitter,
            target: "≥ 98 % frames, stall ratio ≤ 2 %"),
        FaultCase(
            name: "5 % loss + 50±20 ms jitter, both legs (Rust relay)", relay: .rust, publishLeg: lossAndJitter,
            playLeg: lossAndJitter, target: "comparison"),
        FaultCase(
            name: "5 % loss + 50±20 ms jitter, both legs (Rust subscriber for data)", publishLeg: lossAndJitter,
            playLeg: lossAndJitter, dataReader: .rust, target: "every sequence number, as with MoqKit"),
        FaultCase(
            name: "bursty loss (Gilbert–Elliott, ~3 %), both legs",
            publishLeg: .burstLoss(GilbertElliott(goodToBad: 0.01, badToGood: 0.3)),
            playLeg: .burstLoss(GilbertElliott(goodToBad: 0.01, badToGood: 0.3)), target: "no stall for good"),
        FaultCase(
            name: "1 % loss + 50±20 ms jitter in order, both legs",
            publishLeg: Impairment.loss(0.01).with(
                jitter: .milliseconds(20), around: .milliseconds(50), reorder: false),
            playLeg: Impairment.loss(0.01).with(jitter: .milliseconds(20), around: .milliseconds(50), reorder: false),
            target: "≥ 98 % frames"),
        FaultCase(
            name: "2 Mbit/s cap under a 4 Mbit/s publisher (player leg)",
            playLeg: .rate(bitsPerSecond: 2_000_000, queueBytes: 100_000), videoKbps: 4_000, pattern: "snow",
            target: "plays on with dropped groups, never stalls for good"),
        FaultCase(
            name: ladderCapRow, playLeg: .rate(bitsPerSecond: 2_000_000, queueBytes: 100_000),
            ladderKbps: [3_500, 1_200, 400], pattern: "snow",
            target: "≥ 98 % frames, stall ratio ≤ 1 %, on the 1.2 Mbit/s rung"),
        FaultCase(
            name: "ladder 3.5 / 1.2 / 0.4 Mbit/s, player leg 6 → 1.5 → 6 Mbit/s",
            playLeg: .rate(bitsPerSecond: 6_000_000, queueBytes: 100_000),
            event: .playLegChanges([
                (.seconds(4), .rate(bitsPerSecond: 1_500_000, queueBytes: 100_000)),
                (.seconds(14), .rate(bitsPerSecond: 6_000_000, queueBytes: 100_000)),
            ]), window: .seconds(26), ladderKbps: [3_500, 1_200, 400], pattern: "snow",
            target: "down within 1 s, no stall > 200 ms; up within 10 s, no stall"),
        FaultCase(
            // Through moq-dev's relay: its serving of SUBSCRIBE floors (a step down's and a
            // trial's next group) and of a trial's lower priority, not only ours.
            name: "ladder 3.5 / 1.2 / 0.4 Mbit/s, player leg 6 → 1.5 → 6 Mbit/s (Rust relay)", relay: .rust,
            playLeg: .rate(bitsPerSecond: 6_000_000, queueBytes: 100_000),
            event: .playLegChanges([
                (.seconds(4), .rate(bitsPerSecond: 1_500_000, queueBytes: 100_000)),
                (.seconds(14), .rate(bitsPerSecond: 6_000_000, queueBytes: 100_000)),
            ]), window: .seconds(26), ladderKbps: [3_500, 1_200, 400], pattern: "snow", target: "comparison"),
        FaultCase(
            name: "30 s blackhole, both legs", event: .blackhole(.seconds(30)), window: .seconds(45),
            target: "recovers ≤ 2 s after the path returns, no ERROR"),
        FaultCase(name: "NAT rebinding, both legs", event: .rebind, target: "no reconnect"),
        FaultCase(name: "relay restart", event: .relayRestart(down: .seconds(1)), target: "recovers ≤ 2 s"),
        FaultCase(
            // The QUIC interop runner's `handshakeloss` rate. At 60 % both ways a handshake
            // completes in ~6 % of attempts: whether a row starts within its window is luck.
            name: "30 % handshake loss, both legs", publishLeg: .handshakeLoss(0.3), playLeg: .handshakeLoss(0.3),
            target: "starts (time to first frame reported)"),
    ]
}

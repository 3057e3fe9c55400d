// SPDX-License-Identifier: MIT
import MoqBase

/// One direction's memory between datagrams: the bursty-loss state, when the bottleneck is free
/// again, and when the last datagram leaves (for jitter without reordering). Times are
/// monotonic nanoseconds.
struct LinkState {
    /// What happens to one datagram.
    enum Decision: Equatable {
        /// Dropped; `queueFull` when the rate limit's queue had no room.
        case drop(queueFull: Bool)
        /// Sent at `due`, `copies` times; `reordered` when it was held back on purpose,
        /// `overtakes` when it leaves before a datagram that arrived earlier.
        case deliver(due: UInt64, copies: Int, reordered: Bool, overtakes: Bool)
    }

    private var bad = false
    private var linkFreeAt: UInt64 = 0
    private var lastDue: UInt64 = 0

    /// Decides the fate of `bytes` arriving at `now` under `link`.
    mutating func decide(
        _ bytes: [UInt8], _ link: LinkImpairment, now: UInt64, generator: inout SeededGenerator
    ) -> Decision {
        if link.blackhole { return .drop(queueFull: false) }
        // QUIC's long header sets the first bit: Initial, 0-RTT, Handshake and Retry packets.
        if link.handshakeLoss > 0, let first = bytes.first, first & 0x80 != 0, generator.chance(link.handshakeLoss) {
            return .drop(queueFull: false)
        }
        if generator.chance(link.loss) { return .drop(queueFull: false) }
        if let model = link.burstLoss {
            bad = bad ? !generator.chance(model.badToGood) : generator.chance(model.goodToBad)
            if generator.chance(bad ? model.lossInBad : model.lossInGood) { return .drop(queueFull: false) }
        }
        var departure = now
        if let rate = link.rate, rate.bitsPerSecond > 0 {
            let bitsPerSecond = UInt64(rate.bitsPerSecond)
            let start = max(now, linkFreeAt)
            let backlog = (start - now).multipliedReportingOverflow(by: bitsPerSecond).partialValue / 8_000_000_000
            if backlog + UInt64(bytes.count) > UInt64(max(0, rate.queueBytes)) { return .drop(queueFull: true) }
            linkFreeAt = start + UInt64(bytes.count) * 8_000_000_000 / bitsPerSecond
            departure = linkFreeAt
        } else {
            // A rate limit just lifted: what it queued still leaves first (a bottleneck that
            // grows does not reorder its queue).
            departure = max(now, linkFreeAt)
        }
        var due = departure + Self.nanoseconds(link.delay)
        if link.jitter > .zero {
            let spread = Double(Self.nanoseconds(link.jitter))
            let offset = (generator.unit() * 2 - 1) * spread
            due = offset < 0 ? due - min(due - departure, UInt64(-offset)) : due + UInt64(offset)
            if !link.jitterReorders { due = max(due, lastDue) }
        }
        if link.inOrder { due = max(due, lastDue) }
        let reordered = generator.chance(link.reorder)
        if reordered { due += Self.nanoseconds(link.reorderDelay) }
        let overtakes = due < lastDue
        lastDue = max(lastDue, due)
        let copies = generator.chance(link.duplicate) ? 2 : 1
        return .deliver(due: due, copies: copies, reordered: reordered, overtakes: overtakes)
    }

    static func nanoseconds(_ d: Duration) -> UInt64 {
        let (seconds, attoseconds) = d.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

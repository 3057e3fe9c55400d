// SPDX-License-Identifier: MIT

/// What happens to datagrams in one direction. Applied in this order: blackhole, handshake loss,
/// random loss, bursty loss, the rate limit's queue (tail drop), then delay, jitter and
/// reordering, then duplication.
public struct LinkImpairment: Sendable, Equatable {
    /// Drop every datagram.
    public var blackhole: Bool
    /// Probability (0…1) of dropping a datagram, each independently.
    public var loss: Double
    /// Bursty loss, on top of ``loss``.
    public var burstLoss: GilbertElliott?
    /// Probability (0…1) of dropping a QUIC long-header packet (the handshake's packets).
    public var handshakeLoss: Double
    /// One-way delay.
    public var delay: Duration
    /// Each datagram's delay is ``delay`` plus a uniform draw in −jitter…+jitter (never below zero).
    public var jitter: Duration
    /// With jitter, whether a datagram may overtake an earlier one (true), or leaves no earlier
    /// than its predecessor (false: jitter without reordering).
    public var jitterReorders: Bool
    /// Probability (0…1) that a datagram is held back by ``reorderDelay`` so that later ones pass it.
    public var reorder: Double
    /// How long a reordered datagram is held back.
    public var reorderDelay: Duration
    /// Probability (0…1) that a datagram is delivered twice.
    public var duplicate: Double
    /// A bottleneck with a bounded queue.
    public var rate: RateLimit?
    /// Whether every datagram leaves no earlier than the one before it, also across a change of
    /// impairment: a delay that ends does not let new datagrams overtake the delayed ones.
    public var inOrder: Bool

    /// A link impairment; the defaults forward everything at once.
    public init(
        blackhole: Bool = false, loss: Double = 0, burstLoss: GilbertElliott? = nil, handshakeLoss: Double = 0,
        delay: Duration = .zero, jitter: Duration = .zero, jitterReorders: Bool = true, reorder: Double = 0,
        reorderDelay: Duration = .milliseconds(10), duplicate: Double = 0, rate: RateLimit? = nil,
        inOrder: Bool = false
    ) {
        self.blackhole = blackhole
        self.loss = loss
        self.burstLoss = burstLoss
        self.handshakeLoss = handshakeLoss
        self.delay = delay
        self.jitter = jitter
        self.jitterReorders = jitterReorders
        self.reorder = reorder
        self.reorderDelay = reorderDelay
        self.duplicate = duplicate
        self.rate = rate
        self.inOrder = inOrder
    }

    /// Forward everything at once.
    public static let none = LinkImpairment()
    /// Drop everything.
    public static let blackhole = LinkImpairment(blackhole: true)
}

/// The Gilbert–Elliott two-state loss model: a good and a bad state, each with its own loss
/// probability, and per-datagram probabilities of moving between them. The mean burst length
/// is 1 / ``badToGood`` datagrams; the share of time in the bad state is
/// goodToBad / (goodToBad + badToGood).
public struct GilbertElliott: Sendable, Equatable {
    /// Per datagram, the probability of moving from good to bad.
    public var goodToBad: Double
    /// Per datagram, the probability of moving from bad to good.
    public var badToGood: Double
    /// Loss probability in the good state.
    public var lossInGood: Double
    /// Loss probability in the bad state.
    public var lossInBad: Double

    /// A model; by default nothing is lost in the good state and everything in the bad one.
    public init(goodToBad: Double, badToGood: Double, lossInGood: Double = 0, lossInBad: Double = 1) {
        self.goodToBad = goodToBad
        self.badToGood = badToGood
        self.lossInGood = lossInGood
        self.lossInBad = lossInBad
    }

    /// The long-run share of datagrams lost.
    public var meanLoss: Double {
        let total = goodToBad + badToGood
        guard total > 0 else { return lossInGood }
        let bad = goodToBad / total
        return bad * lossInBad + (1 - bad) * lossInGood
    }
}

/// A bottleneck link: datagrams leave at `bitsPerSecond`, wait in a queue of at most
/// `queueBytes`, and are dropped when it is full (tail drop, as a router does).
public struct RateLimit: Sendable, Equatable {
    /// The link's rate.
    public var bitsPerSecond: Int
    /// The queue in front of it.
    public var queueBytes: Int

    /// A bottleneck.
    public init(bitsPerSecond: Int, queueBytes: Int = 64 * 1024) {
        self.bitsPerSecond = bitsPerSecond
        self.queueBytes = queueBytes
    }
}

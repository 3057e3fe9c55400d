// SPDX-License-Identifier: MIT

/// What a ``UDPProxy`` does to datagrams, for each direction on its own (``toServer``,
/// ``toClient``), so that one-way faults are as easy to state as symmetric ones. Decisions are
/// drawn from the proxy's seeded generator in arrival order, so a run with the same traffic
/// makes the same decisions and a failing case replays from its seed.
///
/// ```swift
/// proxy.impair(.loss(0.05).with(jitter: .milliseconds(20), around: .milliseconds(50)))
/// proxy.impair(Impairment(toServer: .blackhole, toClient: .none))   // one-way outage
/// proxy.impair(.rate(bitsPerSecond: 2_000_000))                     // a 2 Mbit/s bottleneck
/// ```
public struct Impairment: Sendable, Equatable {
    /// Datagrams from clients to the server.
    public var toServer: LinkImpairment
    /// Datagrams from the server to clients.
    public var toClient: LinkImpairment

    /// Each direction on its own.
    public init(toServer: LinkImpairment, toClient: LinkImpairment) {
        self.toServer = toServer
        self.toClient = toClient
    }

    /// The same impairment both ways.
    public init(both link: LinkImpairment) { self.init(toServer: link, toClient: link) }

    /// The first proxy's shape: a blackhole both ways, random loss per direction, one delay both ways.
    public init(blackhole: Bool = false, lossToServer: Double = 0, lossToClient: Double = 0, delay: Duration = .zero) {
        self.init(
            toServer: LinkImpairment(blackhole: blackhole, loss: lossToServer, delay: delay),
            toClient: LinkImpairment(blackhole: blackhole, loss: lossToClient, delay: delay))
    }

    /// True when both directions are blackholed.
    public var blackhole: Bool { toServer.blackhole && toClient.blackhole }
    /// Random loss from client to server.
    public var lossToServer: Double { toServer.loss }
    /// Random loss from server to client.
    public var lossToClient: Double { toClient.loss }

    /// Forward everything at once.
    public static let none = Impairment(both: .none)
    /// Drop everything, both ways.
    public static let blackhole = Impairment(both: .blackhole)

    /// Drop each datagram with probability `rate`, both ways.
    public static func loss(_ rate: Double) -> Impairment { Impairment(both: LinkImpairment(loss: rate)) }

    /// Delay every datagram by `delay`, both ways (order is kept).
    public static func delay(_ delay: Duration) -> Impairment { Impairment(both: LinkImpairment(delay: delay)) }

    /// `delay` ± `jitter` (uniform) both ways; datagrams overtake each other when `reorder` is true.
    public static func jitter(_ jitter: Duration, around delay: Duration, reorder: Bool = true) -> Impairment {
        Impairment(both: LinkImpairment(delay: delay, jitter: jitter, jitterReorders: reorder))
    }

    /// Bursty loss both ways (see ``GilbertElliott``).
    public static func burstLoss(_ model: GilbertElliott) -> Impairment {
        Impairment(both: LinkImpairment(burstLoss: model))
    }

    /// A bottleneck of `bitsPerSecond` each way with a queue of `queueBytes` (tail drop beyond it).
    public static func rate(bitsPerSecond: Int, queueBytes: Int = 64 * 1024) -> Impairment {
        Impairment(both: LinkImpairment(rate: RateLimit(bitsPerSecond: bitsPerSecond, queueBytes: queueBytes)))
    }

    /// A delay spike: every datagram `delay` late, in order, both ways. Going back to
    /// ``inOrder`` afterwards delivers what was delayed first and what follows behind it (a radio
    /// link retrying, a handover): nothing arrives for `delay`, then the path catches up.
    public static func spike(_ delay: Duration) -> Impairment {
        Impairment(both: LinkImpairment(delay: delay, inOrder: true))
    }

    /// Nothing dropped or delayed, and nothing overtakes a datagram still delayed by ``spike(_:)``.
    public static let inOrder = Impairment(both: LinkImpairment(inOrder: true))

    /// Drops QUIC long-header packets (Initial, Handshake, 0-RTT, Retry) with probability `rate`,
    /// both ways; short-header packets pass.
    public static func handshakeLoss(_ rate: Double) -> Impairment {
        Impairment(both: LinkImpairment(handshakeLoss: rate))
    }

    /// This impairment with `jitter` around `delay` added both ways.
    public func with(jitter: Duration, around delay: Duration, reorder: Bool = true) -> Impairment {
        var copy = self
        for keyPath in [\Impairment.toServer, \Impairment.toClient] {
            copy[keyPath: keyPath].delay = delay
            copy[keyPath: keyPath].jitter = jitter
            copy[keyPath: keyPath].jitterReorders = reorder
        }
        return copy
    }
}

// SPDX-License-Identifier: MIT

/// What a ``UDPProxy`` does to datagrams. Decisions are drawn from the proxy's seeded generator in
/// arrival order, so a run with the same traffic makes the same decisions.
public struct Impairment: Sendable, Equatable {
    /// Drop every datagram, both ways (a silent link failure: senders see no error).
    public var blackhole: Bool
    /// Probability (0…1) of dropping a datagram from client to server.
    public var lossToServer: Double
    /// Probability (0…1) of dropping a datagram from server to client.
    public var lossToClient: Double
    /// Added one-way delay, each direction (order is kept).
    public var delay: Duration

    /// An impairment; the defaults forward everything at once.
    public init(blackhole: Bool = false, lossToServer: Double = 0, lossToClient: Double = 0, delay: Duration = .zero) {
        self.blackhole = blackhole
        self.lossToServer = lossToServer
        self.lossToClient = lossToClient
        self.delay = delay
    }

    /// Forward everything at once.
    public static let none = Impairment()
    /// Drop everything.
    public static let blackhole = Impairment(blackhole: true)

    /// Drop each datagram with probability `rate`, both ways.
    public static func loss(_ rate: Double) -> Impairment { Impairment(lossToServer: rate, lossToClient: rate) }

    /// Delay every datagram by `delay`, both ways.
    public static func delay(_ delay: Duration) -> Impairment { Impairment(delay: delay) }
}

/// What a ``UDPProxy`` has done so far.
public struct ProxyStatistics: Sendable, Equatable {
    /// Datagrams forwarded from clients to the server.
    public var forwardedToServer = 0
    /// Datagrams forwarded from the server to clients.
    public var forwardedToClient = 0
    /// Datagrams from clients that were dropped.
    public var droppedToServer = 0
    /// Datagrams from the server that were dropped.
    public var droppedToClient = 0
    /// Distinct client addresses seen.
    public var clients = 0

    /// Everything dropped, both ways.
    public var dropped: Int { droppedToServer + droppedToClient }
    /// Everything forwarded, both ways.
    public var forwarded: Int { forwardedToServer + forwardedToClient }
}

/// SplitMix64: small, fast, and the same sequence for the same seed on every platform.
struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        p > 0 && (p >= 1 || Double(next() >> 11) / Double(1 << 53) < p)
    }
}

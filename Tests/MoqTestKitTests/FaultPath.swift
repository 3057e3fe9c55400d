// SPDX-License-Identifier: MIT
import Foundation
import MoqTestKit

/// What a fault test plays through: a relay with a proxy on each leg (the publisher's and the
/// player's; one proxy for both when `shared`), stopped together.
struct FaultPath {
    let relay: TestRelay
    let publishLeg: UDPProxy
    let playLeg: UDPProxy

    /// Starts `relay` (a new one when nil) and the proxies in front of it, seeded 1 and 2 (or
    /// `SWIFTMOQ_FAULT_SEED` and the next, to try other loss patterns or replay one).
    static func start(relay: TestRelay? = nil, shared: Bool = false) throws -> FaultPath {
        let relay = try relay ?? TestRelay.start()
        let seed = ProcessInfo.processInfo.environment["SWIFTMOQ_FAULT_SEED"].flatMap(UInt64.init) ?? 1
        let publishLeg = try UDPProxy.start(forwardingTo: relay.port, seed: seed)
        let playLeg = shared ? publishLeg : try UDPProxy.start(forwardingTo: relay.port, seed: seed &+ 1)
        return FaultPath(relay: relay, publishLeg: publishLeg, playLeg: playLeg)
    }

    /// Both legs.
    var legs: [UDPProxy] { publishLeg === playLeg ? [publishLeg] : [publishLeg, playLeg] }

    /// Applies `impairment` to both legs.
    func impair(_ impairment: Impairment) { for leg in legs { leg.impair(impairment) } }

    /// Drops everything on both legs until ``restore()``.
    func blackhole() { for leg in legs { leg.blackhole() } }

    /// Ends the impairments on both legs.
    func restore() { for leg in legs { leg.restore() } }

    /// Stops the proxies and the relay.
    /// Runs `body` with a path started for it and stops the path (and its relay) before returning,
    /// whether `body` returned or threw.
    @discardableResult
    static func with<Result>(
        relay: TestRelay? = nil, shared: Bool = false, _ body: (FaultPath) async throws -> Result
    ) async throws -> Result {
        try await scoped(try start(relay: relay, shared: shared), teardown: { await $0.stop() }, body)
    }

    func stop() async {
        for leg in legs { leg.stop() }
        await relay.stop()
    }
}

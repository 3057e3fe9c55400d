// SPDX-License-Identifier: MIT
import Foundation
import MoqTestKit
import Testing

/// Each impairment of the UDP proxy, on an echo server: the effect is measured on the datagrams
/// themselves (indices carried in their payload), so none of these can pass with the
/// impairment ignored.
@Suite("UDP proxy impairments", .serialized, .timeLimit(.minutes(1)))
struct ProxyImpairmentTests {
    /// A datagram carrying its index in two bytes, padded to `size`.
    private static func datagram(_ i: Int, size: Int = 2) -> [UInt8] {
        [UInt8(i >> 8), UInt8(i & 0xFF)] + [UInt8](repeating: 0x40, count: max(0, size - 2))
    }

    private static func index(_ d: [UInt8]) -> Int { Int(d[0]) << 8 | Int(d[1]) }

    private func withEcho(
        seed: UInt64 = 11, _ body: (UDPProxy, UDPEcho, UDPClient) async throws -> Void
    ) async throws {
        let echo = try UDPEcho()
        let proxy = try UDPProxy.start(forwardingTo: echo.port, seed: seed)
        defer {
            proxy.stop()
            echo.stop()
        }
        try await body(proxy, echo, try UDPClient(port: proxy.port))
    }

    @Test("jitter with reordering: every datagram arrives, some overtake; without reordering the order holds")
    func jitter() async throws {
        try await withEcho { proxy, _, client in
            proxy.impair(
                Impairment(
                    toServer: LinkImpairment(delay: .milliseconds(30), jitter: .milliseconds(20)), toClient: .none))
            for i in 0..<200 {
                client.send(Self.datagram(i))
                if i % 20 == 19 { try await Task.sleep(for: .milliseconds(2)) }
            }
            let reordered = try await client.receive(count: 200).map(Self.index)
            #expect(Set(reordered) == Set(0..<200))
            #expect(reordered != Array(0..<200), "jitter of ±20 ms over a 20 ms burst must reorder some")
            #expect(proxy.statistics.overtaken > 0)

            proxy.impair(
                Impairment(
                    toServer: LinkImpairment(
                        delay: .milliseconds(30), jitter: .milliseconds(20), jitterReorders: false),
                    toClient: .none))
            let before = proxy.statistics.overtaken
            for i in 0..<200 { client.send(Self.datagram(i)) }
            #expect(try await client.receive(count: 200).map(Self.index) == Array(0..<200))
            #expect(proxy.statistics.overtaken == before)
        }
    }

    @Test("reordering holds a share back so later datagrams pass it; duplication delivers copies")
    func reorderAndDuplicate() async throws {
        try await withEcho { proxy, echo, client in
            proxy.impair(
                Impairment(toServer: LinkImpairment(reorder: 0.2, reorderDelay: .milliseconds(15)), toClient: .none))
            for i in 0..<100 { client.send(Self.datagram(i)) }
            let got = try await client.receive(count: 100).map(Self.index)
            #expect(Set(got) == Set(0..<100) && got != Array(0..<100))
            #expect(proxy.statistics.reordered > 5 && proxy.statistics.reordered < 40, "\(proxy.statistics)")

            proxy.impair(Impairment(toServer: LinkImpairment(duplicate: 0.5), toClient: .none))
            let before = proxy.statistics
            for i in 0..<100 { client.send(Self.datagram(i)) }
            // All 100 and their copies forwarded (no quiet period is trusted on a loaded machine),
            // then exactly that many echoes.
            try await eventually("the proxy to forward the 100 and their copies", timeout: .seconds(20)) {
                let s = proxy.statistics
                return s.forwardedToServer - before.forwardedToServer >= 100 + (s.duplicated - before.duplicated)
            }
            let duplicated = proxy.statistics.duplicated - before.duplicated
            let copies = try await client.receive(count: 100 + duplicated).map(Self.index)
            #expect(duplicated > 25 && duplicated < 75, "\(proxy.statistics)")
            #expect(copies.count == 100 + duplicated && Set(copies) == Set(0..<100))
            #expect(echo.received == 200 + duplicated)
        }
    }

    /// Limits the client → server direction only.
    static func rateLimitToServer(_ proxy: UDPProxy, bitsPerSecond: Int, queueBytes: Int) {
        proxy.impair(
            Impairment(
                toServer: LinkImpairment(rate: RateLimit(bitsPerSecond: bitsPerSecond, queueBytes: queueBytes)),
                toClient: .none))
    }

    @Test("a rate limit paces datagrams at the link rate and tail-drops beyond its queue")
    func rateLimit() async throws {
        try await withEcho { proxy, _, client in
            // 1 Mbit/s: a 1,000-byte datagram takes 8 ms; the queue holds 10 of them.
            Self.rateLimitToServer(proxy, bitsPerSecond: 1_000_000, queueBytes: 10_000)
            let start = ContinuousClock.now
            for i in 0..<50 { client.send(Self.datagram(i, size: 1_000)) }
            // Every datagram is either forwarded or dropped at the queue once the link has drained
            // (a loaded machine may deschedule the proxy or the echo for a while: no quiet period
            // is trusted); then exactly the forwarded ones come back.
            try await eventually("the proxy to forward or drop all 50", timeout: .seconds(20)) {
                let s = proxy.statistics
                return s.forwardedToServer + s.droppedToServer >= 50
            }
            let stats = proxy.statistics
            let got = try await client.receive(count: stats.forwardedToServer).map(Self.index)
            // 10 fit the queue at once; a proxy thread descheduled mid-burst lets the link drain a few more.
            #expect(got.count >= 10 && got.count <= 20, "\(got.count) through a 10-datagram queue")
            #expect(got == Array(0..<got.count), "a queue keeps order and drops the tail")
            #expect(stats.queueDrops == 50 - got.count)
            // Paced: the last one left ~8 ms × count after the first arrived.
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(8 * (got.count - 1)), "\(elapsed)")
        }
    }

    @Test("a rate limit lifted: what it queued still leaves first, and what follows comes after it")
    func rateLiftKeepsOrder() async throws {
        try await withEcho { proxy, _, client in
            // 0.1 Mbit/s: 1,000 bytes take 80 ms; 8 queued take 640 ms to drain.
            Self.rateLimitToServer(proxy, bitsPerSecond: 100_000, queueBytes: 8_000)
            for i in 0..<8 { client.send(Self.datagram(i, size: 1_000)) }
            try await eventually("the first to leave", timeout: .seconds(20)) {
                proxy.statistics.forwardedToServer >= 1
            }
            proxy.restore()
            let before = proxy.statistics.forwardedToServer
            for i in 8..<12 { client.send(Self.datagram(i, size: 1_000)) }
            let got = try await client.receive(count: 12).map(Self.index)
            #expect(before < 8, "the queue still held some when the limit was lifted")
            // Without it, the four sent after the lift overtook the queue (up to 560 ms early).
            #expect(got == Array(0..<12), "\(got)")
        }
    }

    @Test("Gilbert–Elliott loss comes in bursts, near its mean rate, and replays from the seed")
    func burstLoss() async throws {
        let model = GilbertElliott(goodToBad: 0.05, badToGood: 0.3)
        var runs: [[Int]] = []
        for _ in 0..<2 {
            try await withEcho(seed: 99) { proxy, _, client in
                proxy.impair(Impairment(toServer: LinkImpairment(burstLoss: model), toClient: .none))
                // In batches the proxy has taken before the next, reading the echoes as they come:
                // a full socket buffer (a busy machine) would drop datagrams itself, and those
                // drops would not replay.
                var echoed: [[UInt8]] = []
                for batch in 0..<100 {
                    for i in (batch * 20)..<(batch * 20 + 20) { client.send(Self.datagram(i)) }
                    try await eventually("the proxy took batch \(batch)") {
                        let s = proxy.statistics
                        return s.forwardedToServer + s.droppedToServer == batch * 20 + 20
                    }
                    echoed += client.pending()
                }
                // Then exactly the rest of what the proxy forwarded (no quiet period is trusted).
                let rest = proxy.statistics.forwardedToServer - echoed.count
                let got = Set((echoed + (try await client.receive(count: rest))).map(Self.index))
                runs.append((0..<2_000).filter { !got.contains($0) })
            }
        }
        let lost = runs[0]
        #expect(runs[0] == runs[1], "the same seed drops the same datagrams")
        let share = Double(lost.count) / 2_000
        #expect(abs(share - model.meanLoss) < 0.06, "lost \(share), model \(model.meanLoss)")
        // Mean burst length: 1 / badToGood ≈ 3.3; independent loss at this rate gives ≈ 1.2.
        var bursts = 0
        for (n, i) in lost.enumerated() where n == 0 || lost[n - 1] != i - 1 { bursts += 1 }
        let meanBurst = Double(lost.count) / Double(max(1, bursts))
        #expect(meanBurst > 2, "mean burst \(meanBurst)")
    }

    @Test("handshake loss drops only QUIC long-header packets")
    func handshakeLoss() async throws {
        try await withEcho { proxy, _, client in
            proxy.impair(.handshakeLoss(1))
            for i in 0..<20 { client.send([i % 2 == 0 ? 0xC3 : 0x43, UInt8(i)]) }
            try await eventually("the proxy to take all 20") {
                let s = proxy.statistics
                return s.forwardedToServer + s.droppedToServer == 20
            }
            let got = try await client.receive(count: proxy.statistics.forwardedToServer).map { Int($0[1]) }
            #expect(got == Array(stride(from: 1, to: 20, by: 2)))
            #expect(proxy.statistics.droppedToServer == 10)
        }
    }

    @Test("a delay spike holds everything, then delivers it in order with what follows behind it")
    func spike() async throws {
        try await withEcho { proxy, _, client in
            proxy.impair(.spike(.milliseconds(200)))
            let start = ContinuousClock.now
            for i in 0..<10 { client.send(Self.datagram(i)) }
            try await Task.sleep(for: .milliseconds(20))
            proxy.impair(.inOrder)
            for i in 10..<20 { client.send(Self.datagram(i)) }
            #expect(try await client.receive(count: 20).map(Self.index) == Array(0..<20))
            #expect(ContinuousClock.now - start >= .milliseconds(190), "held for the spike")

            // Without keeping the order, what follows the spike overtakes what it still holds.
            proxy.impair(.spike(.milliseconds(200)))
            for i in 0..<10 { client.send(Self.datagram(i)) }
            try await Task.sleep(for: .milliseconds(20))
            proxy.impair(.none)
            for i in 10..<20 { client.send(Self.datagram(i)) }
            #expect(try await client.receive(count: 20).map(Self.index) == Array(10..<20) + Array(0..<10))
        }
    }

    @Test("one-way faults: a blackhole toward the server, then only toward the client")
    func oneWay() async throws {
        try await withEcho { proxy, echo, client in
            proxy.impair(Impairment(toServer: .blackhole, toClient: .none))
            for i in 0..<5 { client.send(Self.datagram(i)) }
            #expect(try await client.receiveUntilQuiet(.milliseconds(100)).isEmpty)
            #expect(echo.received == 0)

            proxy.impair(Impairment(toServer: .none, toClient: .blackhole))
            for i in 0..<5 { client.send(Self.datagram(i)) }
            try await eventually("the echo answers 5") { echo.received == 5 }
            #expect(try await client.receiveUntilQuiet(.milliseconds(100)).isEmpty)
            #expect(proxy.statistics.droppedToClient == 5 && proxy.statistics.droppedToServer == 5)
        }
    }

    @Test("rebind gives the flow a new source port toward the server, and forwarding goes on")
    func rebind() async throws {
        try await withEcho { proxy, echo, client in
            client.send(Self.datagram(1))
            _ = try await client.receive(count: 1)
            let first = echo.sources
            proxy.rebind()
            try await eventually("rebound") { proxy.statistics.rebinds == 1 }
            client.send(Self.datagram(2))
            #expect(try await client.receive(count: 1).map(Self.index) == [2])
            #expect(echo.sources.count == 2 && echo.sources.isSuperset(of: first))
            #expect(proxy.statistics.clients == 1, "still one client flow")
        }
    }
}

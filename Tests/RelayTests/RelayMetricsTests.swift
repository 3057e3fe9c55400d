// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import Testing

@testable import SwiftMoQ

/// `/metrics` read as Prometheus reads it (its own parser, prometheus-client from PyPI) and
/// `/sessions`, after real traffic through the relay.
@Suite("Relay /metrics and /sessions", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct RelayMetricsTests {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// Scrapes `/metrics` with `prometheus_scrape.py`: the status, and the samples when it parsed.
    static func scrape(_ relay: MoqRelay, token: String? = nil) async throws -> (status: Int, samples: [Sample]) {
        let port = try #require(relay.httpPort)
        let scraper = try RustPeer.launch(
            ["http://127.0.0.1:\(port)/metrics"] + (token.map { [$0] } ?? []), script: "prometheus_scrape.py")
        let result = try await scraper.waitFor(event: "result", timeout: .seconds(20))
        #expect(result.string("error") == nil, "Prometheus' parser refused the text: \(result.line)")
        var samples: [Sample] = []
        if case .array(let items)? = result.fields["samples"] {
            for case .object(let item) in items {
                guard case .string(let name)? = item["name"] else { continue }
                var labels: [String: String] = [:]
                if case .object(let l)? = item["labels"] {
                    for (k, v) in l { if case .string(let s) = v { labels[k] = s } }
                }
                let value: Double
                switch item["value"] {
                case .double(let d)?: value = d
                case .int(let i)?: value = Double(i)
                default: continue
                }
                samples.append(Sample(name: name, labels: labels, value: value))
            }
        }
        return (result.int("status") ?? 0, samples)
    }

    static func value(_ samples: [Sample], _ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    @Test("/metrics parses with Prometheus' parser and counts the traffic; a token guards it and /sessions")
    func metrics() async throws {
        try await scoped(
            try RelayTests.relay { config in
                config.serveMetrics = true
                config.metricsToken = "s3cret"
            }, teardown: { await $0.shutdown(grace: .zero) }
        ) { (relay) async throws in
            let broadcast = BroadcastProducer(path: "cam")
            let (publisher, subscriber, track, remote) = try await relayedTrack(
                relay, publishing: broadcast, maxLatencyMs: 5_000)
            let consumer = remote.consumer(maxLatencyMs: 5_000)
            for i in 0..<10 { track.writeSingleFrameGroup(Bytes(utf8: "frame \(i)"), timestamp: UInt64(i)) }
            var received = 0
            while received < 10, let group = try await consumer.nextGroup() {
                while try await group.nextFrame() != nil { received += 1 }
            }

            // Without the token: refused, and /sessions too.
            #expect(try await Self.scrape(relay).status == 401)
            #expect(try await RelayWebTests.get(relay, "/sessions").status == 401)

            let (status, samples) = try await Self.scrape(relay, token: "s3cret")
            #expect(status == 200)
            #expect(Self.value(samples, "swiftmoq_relay_sessions", ["kind": "client"]) == 2)
            #expect(Self.value(samples, "swiftmoq_relay_sessions", ["kind": "link"]) == 0)
            #expect(Self.value(samples, "swiftmoq_relay_sessions_accepted_total") == 2)
            #expect(Self.value(samples, "swiftmoq_relay_broadcasts") == 1)
            #expect(Self.value(samples, "swiftmoq_relay_routes") == 1)
            #expect(Self.value(samples, "swiftmoq_relay_upstream_subscriptions") == 1)
            #expect(Self.value(samples, "swiftmoq_relay_frames_total", ["direction": "in"]) ?? 0 >= 10)
            #expect(Self.value(samples, "swiftmoq_relay_frames_total", ["direction": "out"]) ?? 0 >= 10)
            #expect(Self.value(samples, "swiftmoq_relay_payload_bytes_total", ["direction": "out"]) ?? 0 >= 70)
            #expect(Self.value(samples, "swiftmoq_relay_groups_dropped_total", ["reason": "too_old"]) == 0)
            #expect(Self.value(samples, "swiftmoq_relay_loop_cpu_seconds_total", ["loop": "0"]) ?? 0 > 0)
            #expect(Self.value(samples, "swiftmoq_relay_loop_queue_depth", ["loop": "0"]) != nil)

            let sessions = try await RelayWebTests.get(relay, "/sessions", headers: ["Authorization": "Bearer s3cret"])
            #expect(sessions.status == 200)
            let list = try JSONSerialization.jsonObject(with: Data(sessions.body.utf8)) as? [[String: Any]]
            #expect(list?.count == 2)
            #expect(list?.allSatisfy { $0["kind"] as? String == "client" && $0["root"] as? String == "anon" } == true)
            #expect(list?.contains { ($0["frames_in"] as? Int ?? 0) >= 10 } == true)

            // A closed session's counters stay in the totals.
            let before = Self.value(samples, "swiftmoq_relay_frames_total", ["direction": "out"]) ?? 0
            subscriber.close()
            try await eventually("the relay to see the subscriber leave") { relay.trackedSessions.count == 1 }
            let after = try await Self.scrape(relay, token: "s3cret").samples
            #expect(Self.value(after, "swiftmoq_relay_sessions", ["kind": "client"]) == 1)
            #expect(Self.value(after, "swiftmoq_relay_frames_total", ["direction": "out"]) ?? 0 >= before)
            publisher.close()
        }
    }

    @Test("/metrics is off unless asked for")
    func off() async throws {
        try await withRelay(try RelayTests.relay()) {
            (relay) async throws in
            #expect(try await RelayWebTests.get(relay, "/metrics").status == 404)
            #expect(try await RelayWebTests.get(relay, "/sessions").status == 404)
        }
    }
}

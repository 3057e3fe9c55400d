// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqTestKit
import Testing

@testable import SwiftMoQ

/// `MoqSession.clientNetworkThreads` is process-wide: this suite runs alone (SOLO_TESTS), so that no
/// other test's sessions take turns on the client loops while it counts them.
@Suite("Client sessions over several network threads", .serialized, .timeLimit(.minutes(2)))
struct ClientNetworkThreadsTests {
    @Test("clientNetworkThreads = 3: six client sessions take the three client loops in turn and still play")
    func clientThreads() async throws {
        try await withRelay(try RelayLoopsTests.relay(threads: 1)) {
            (relay) async throws in
            MoqSession.clientNetworkThreads = 3
            defer { MoqSession.clientNetworkThreads = 1 }
            #expect(MoqSession.clientNetworkThreads == 3)
            let publisher = try await RelayLoopsTests.connect(relay)
            let broadcast = BroadcastProducer(path: "cam")
            let track = broadcast.createTrack("video")
            publisher.publish(broadcast)
            let (viewers, tallies) = try await watch("cam", track: "video", viewers: 5, maxLatencyMs: 5_000) {
                try await RelayLoopsTests.connect(relay)
            }
            let writing = GroupedPublisher(track)
            defer {
                writing.cancel()
                for t in tallies { t.cancel() }
            }
            let sessions = [publisher] + viewers
            var loops: [ObjectIdentifier: Int] = [:]
            for s in sessions { loops[ObjectIdentifier(s.loop), default: 0] += 1 }
            #expect(loops.count == 3 && loops.values.allSatisfy { $0 == 2 }, "\(loops.values)")
            try await eventually("every viewer to get 3 groups") { tallies.allSatisfy { $0.groups.count >= 3 } }
            for s in sessions { s.close() }
        }
    }
}

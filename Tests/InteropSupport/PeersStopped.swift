// SPDX-License-Identifier: MIT
import MoqSync
package import Testing

/// A test trait: every ``RustPeer`` a test launches is stopped, and its exit awaited, before the
/// test returns (and before the next test of a serialized suite starts).
///
/// Tests still end their peers early where the test is about that (`terminateInBackground()` in a
/// `defer` sends SIGTERM at once); this scope is what makes "early" also "done": no child of one test
/// outlives it to load the 2-core machine, hold a port, or speak to the next test's relay.
///
/// ```swift
/// @Suite("…", .peersStopped)
/// struct MyInteropTests { … }
/// ```
package struct PeersStopped: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // Per test case: a suite's scope would keep its tests' peers alive until the suite ends.
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if PeerScope.current != nil {
            try await function()
            return
        }
        let scope = PeerScope()
        do {
            try await PeerScope.$current.withValue(scope) { try await function() }
        } catch {
            await scope.stopAll()
            throw error
        }
        await scope.stopAll()
    }
}

extension Trait where Self == PeersStopped {
    /// Every peer launched by a test is stopped, and its exit awaited, before the test returns.
    package static var peersStopped: Self { PeersStopped() }
}

/// The peers launched within one test's scope.
final class PeerScope: Sendable {
    @TaskLocal static var current: PeerScope?

    private let peers = Lock<[RustPeer]>([])

    func add(_ peer: RustPeer) { peers.withLock { $0.append(peer) } }

    /// Stops every peer (SIGTERM, SIGKILL after the grace) and waits for all of them to exit.
    func stopAll() async {
        let all = peers.withLock { p in
            defer { p.removeAll() }
            return p
        }
        await withTaskGroup(of: Void.self) { group in
            for peer in all { group.addTask { _ = await peer.terminateAndWait() } }
        }
    }
}

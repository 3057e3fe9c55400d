// SPDX-License-Identifier: MIT
import Foundation

/// Runs a blocking call (a process exit, a pull with a timeout) on a thread of its own and
/// suspends until it returns. Swift's cooperative pool has one thread per core (two on the CI
/// machine): a test blocking one of them stalls every other test's tasks in the process —
/// in-process relays, retry timers, event waits — which turned load into spurious timeouts.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// A value handed to ``offThePool(_:)`` that the caller vouches is used by one thread at a time
/// (the caller suspends until the body returns).
package struct Handed<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

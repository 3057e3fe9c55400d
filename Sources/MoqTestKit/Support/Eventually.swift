// SPDX-License-Identifier: MIT

/// Polls `condition` every `interval` until it holds, or throws after `timeout`.
///
/// The one way tests here wait for something that has no notification (a count at a relay, a
/// state on another thread): never a fixed sleep. The failure says what was awaited, for how long,
/// and `detail()` as it was at the deadline (the last value seen), e.g.
/// `timed out waiting for 3 subscribers at the relay (20 s; last seen: 2)`.
///
/// - Throws: ``TestKitError/timedOut(_:)``, or what `condition` throws; `CancellationError` when
///   the task is cancelled.
public func eventually(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(10),
    detail: () -> String = { "" }, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now >= deadline {
            let seen = detail()
            throw TestKitError.timedOut("\(what()) (\(timeout)\(seen.isEmpty ? "" : "; last seen: \(seen)"))")
        }
        try await Task.sleep(for: interval)
    }
}

/// Polls `sample` every `interval` until `accept` takes its value, and returns that value; after
/// `timeout` throws with the last value seen.
///
/// - Throws: ``TestKitError/timedOut(_:)`` naming `what` and the last value, or what `sample`
///   throws; `CancellationError` when the task is cancelled.
@discardableResult
public func eventually<Value>(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(10),
    _ sample: () async throws -> Value, until accept: (Value) -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        let value = try await sample()
        if accept(value) { return value }
        if ContinuousClock.now >= deadline {
            throw TestKitError.timedOut("\(what()) (\(timeout); last seen: \(value))")
        }
        try await Task.sleep(for: interval)
    }
}

/// Runs `operation`, cancelling it after `timeout`: for awaits that end on an event but must not
/// hold a test forever (`MoqSession.closed()`, a stream's next element). The operation must honour
/// cancellation (SwiftMoQ's waits do).
///
/// - Throws: ``TestKitError/timedOut(_:)`` naming `what` when the time ran out first, or what
///   `operation` throws.
public func withTimeout<Value: Sendable>(
    _ what: String, _ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TestKitError.timedOut("\(what) (\(timeout))")
        }
        return value
    }
}

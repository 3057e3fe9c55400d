// SPDX-License-Identifier: MIT

/// Retries `attempt` every 2 ms (sleeping, so no thread is held) until it returns a value or `timeout`
/// passes. For GStreamer calls that have a non-blocking form but no notification.
func poll<Value>(
    _ what: @autoclosure () -> String, timeout: Duration, _ attempt: () throws(TestKitError) -> Value?
) async throws(TestKitError) -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        if let value = try attempt() { return value }
        if ContinuousClock.now >= deadline { throw .timedOut(what()) }
        do { try await Task.sleep(for: .milliseconds(2)) } catch { throw .timedOut("\(what()) (cancelled)") }
    }
}

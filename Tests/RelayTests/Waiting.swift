// SPDX-License-Identifier: MIT
import SwiftMoQ
import Testing

/// The reason `session` closed, once it has (polled: `MoqSession.closed()` cannot be cancelled, so a
/// session that never closes would hang the test instead of failing it); nil, with an issue, after `timeout`.
func closeReason(
    of session: MoqSession, within timeout: Duration = .seconds(15), sourceLocation: SourceLocation = #_sourceLocation
) async throws -> SessionCloseReason? {
    let deadline = ContinuousClock.now + timeout
    while session.closeReason == nil {
        if ContinuousClock.now > deadline {
            Issue.record("the session did not close within \(timeout)", sourceLocation: sourceLocation)
            return nil
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    return session.closeReason
}

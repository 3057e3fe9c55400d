// SPDX-License-Identifier: MIT
public import SwiftMoQ

/// Runs `body` with a ``TestRelay`` started for it, and stops the relay before returning, whether
/// `body` returned or threw: a test's relay never outlives the test (a `defer { Task { … } }`
/// teardown runs after the test returned, beside the next one).
///
/// ```swift
/// try await withTestRelay { relay in
///     let session = try await relay.connect()
///     …
/// }
/// ```
@discardableResult
public func withTestRelay<Result>(
    path: String = "anon", logger: MoqLogger = .silent, upstream: TestRelay? = nil,
    _ body: (TestRelay) async throws -> Result
) async throws -> Result {
    try await scoped(
        try TestRelay.start(path: path, logger: logger, upstream: upstream), teardown: { await $0.stop() }, body)
}

/// Runs `body` with `relay` (a `MoqRelay` started for it, e.g. `try MoqRelay.start(configuration)`
/// for what ``TestRelay`` does not set: auth, limits, links, HTTP), and shuts it down with `grace`
/// before returning, whether `body` returned or threw.
@discardableResult
public func withRelay<Result>(
    _ relay: MoqRelay, grace: Duration = .zero, _ body: (MoqRelay) async throws -> Result
) async throws -> Result {
    try await scoped(relay, teardown: { await $0.shutdown(grace: grace) }, body)
}

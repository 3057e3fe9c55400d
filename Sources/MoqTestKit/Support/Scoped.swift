// SPDX-License-Identifier: MIT

/// Runs `body` with `resource`, then `teardown(resource)` before returning, whether `body` returned
/// or threw: the scoped form of a fixture whose teardown is asynchronous (a relay's shutdown, a
/// peer's exit), which a `defer` cannot await. A test's fixtures so end with the test, never beside
/// the next one.
///
/// ```swift
/// try await scoped(try MoqRelay.start(configuration), teardown: { await $0.shutdown(grace: .zero) }) { relay in
///     …
/// }
/// ```
@discardableResult
public func scoped<Resource, Result>(
    _ resource: Resource, teardown: (Resource) async -> Void, _ body: (Resource) async throws -> Result
) async throws -> Result {
    do {
        let result = try await body(resource)
        await teardown(resource)
        return result
    } catch {
        await teardown(resource)
        throw error
    }
}

// SPDX-License-Identifier: MIT

extension Pipeline {
    /// Starts the pipeline when it is not running, then waits for a bus message that `match`es (among
    /// the messages of this run so far and those to come).
    ///
    /// - Returns: the matching message.
    /// - Throws: ``PipelineError/failed(_:)`` when an ERROR arrives first (unless `match` accepts it),
    ///   ``PipelineError/timedOut(_:)``, ``PipelineError/notRunning`` if the pipeline is stopped
    ///   meanwhile, ``PipelineError/cancelled``, or what ``start(_:)`` throws.
    @discardableResult
    public func run(
        until match: @escaping @Sendable (BusMessage) -> Bool, timeout: Duration = .seconds(30)
    ) async throws(PipelineError) -> BusMessage {
        if !isRunning { try start() }
        return try await hub.wait(for: "a matching bus message", timeout: timeout, match)
    }

    /// Waits for end-of-stream on a running pipeline.
    ///
    /// - Throws: ``PipelineError/failed(_:)`` on an ERROR, ``PipelineError/timedOut(_:)``,
    ///   ``PipelineError/notRunning``, ``PipelineError/cancelled``.
    public func waitForEOS(timeout: Duration = .seconds(30)) async throws(PipelineError) {
        _ = try await hub.wait(for: "end of stream", timeout: timeout) { $0.isEOS }
    }

    /// Waits for a message that `match`es, without failing on ERROR messages (to wait for an expected
    /// error, or a warning while errors are acceptable). `match` runs on the bus thread (or the
    /// waiting task) with nothing locked, so it may read ``collectedMessages``.
    @discardableResult
    public func waitForMessage(
        timeout: Duration = .seconds(30), _ match: @escaping @Sendable (BusMessage) -> Bool
    ) async throws(PipelineError) -> BusMessage {
        try await hub.wait(for: "a matching bus message", timeout: timeout, failOnError: false, match)
    }
}

// SPDX-License-Identifier: MIT
public import MoqPipeline

/// When ``Pipeline/runReport(until:timeout:)`` stops waiting.
public enum StopCondition: Sendable {
    /// At end of stream.
    case eos
    /// At the first message `match` accepts.
    case message(@Sendable (BusMessage) -> Bool)
    /// Only at the timeout (or an ERROR): to run a live pipeline for a while.
    case timeout
}

/// How a pipeline run went, with every bus message, and assertion helpers that throw a
/// ``TestKitError/expectationFailed(_:)`` naming what was seen instead.
///
/// ```swift
/// let report = await Pipeline(launch: "videotestsrc num-buffers=10 ! fakesink").runReport()
/// try report.expectEOS()
/// try report.expectNoErrors()
/// ```
public struct PipelineReport: Sendable {
    /// Why the run stopped.
    public enum Outcome: Sendable, Equatable {
        /// End of stream.
        case eos
        /// The stop condition's message.
        case matched(BusMessage)
        /// An ERROR.
        case error(BusMessage)
        /// The timeout passed.
        case timedOut
        /// The pipeline did not start (parse error or failed state change).
        case startFailed(PipelineError)
    }

    /// The description that ran.
    public var description: String
    /// Why the run stopped.
    public var outcome: Outcome
    /// Every bus message of the run, in order.
    public var messages: [BusMessage]

    /// The ERROR messages.
    public var errors: [BusMessage] { messages.filter(\.isError) }
    /// The WARNING messages.
    public var warnings: [BusMessage] { messages.filter(\.isWarning) }
    /// Whether the run ended with EOS.
    public var reachedEOS: Bool { outcome == .eos }

    /// Fails unless the run ended with EOS.
    public func expectEOS() throws(TestKitError) {
        guard reachedEOS else { throw fail("expected EOS; the run ended with \(outcome)") }
    }

    /// Fails if any ERROR was posted (or the pipeline did not start).
    public func expectNoErrors() throws(TestKitError) {
        if case .startFailed(let e) = outcome { throw fail("the pipeline did not start: \(e)") }
        if let first = errors.first { throw fail("expected no ERROR; got \(first)") }
    }

    /// Fails unless a WARNING's text or debug string contains `text`; returns it.
    @discardableResult
    public func expectWarning(containing text: String) throws(TestKitError) -> BusMessage {
        guard let m = warnings.first(where: { Self.mentions($0, text) }) else {
            throw fail("expected a WARNING containing \"\(text)\"; warnings: \(warnings.map(\.description))")
        }
        return m
    }

    /// Fails unless an ERROR's text or debug string contains `text`; returns it.
    @discardableResult
    public func expectError(containing text: String) throws(TestKitError) -> BusMessage {
        guard let m = errors.first(where: { Self.mentions($0, text) }) else {
            throw fail("expected an ERROR containing \"\(text)\"; errors: \(errors.map(\.description))")
        }
        return m
    }

    /// Fails unless an element message with this structure name was posted; returns its fields.
    @discardableResult
    public func expectElementMessage(named name: String) throws(TestKitError) -> [String: PipelineValue] {
        for m in messages {
            if case .element(_, name, let fields, _) = m { return fields }
        }
        throw fail("expected an element message \"\(name)\"")
    }

    private static func mentions(_ m: BusMessage, _ text: String) -> Bool {
        switch m {
        case .error(_, _, _, let message, let debug), .warning(_, _, _, let message, let debug):
            message.contains(text) || (debug?.contains(text) ?? false)
        default: false
        }
    }

    private func fail(_ what: String) -> TestKitError {
        let log = messages.filter { if case .stateChanged = $0 { false } else { true } }.suffix(20)
        return .expectationFailed(
            "\(what)\n  pipeline: \(description)\n  last messages:\n    \(log.map(\.description).joined(separator: "\n    "))"
        )
    }
}

extension Pipeline {
    /// Starts the pipeline, waits until `stop` (EOS by default), an ERROR, or `timeout`, stops it, and
    /// reports. Never throws: a pipeline that does not start is reported as
    /// ``PipelineReport/Outcome/startFailed(_:)``.
    public func runReport(until stop: StopCondition = .eos, timeout: Duration = .seconds(10)) async -> PipelineReport {
        let outcome: PipelineReport.Outcome
        do {
            try start()
            let m = try await waitForMessage(timeout: timeout) { m in
                switch stop {
                case .eos: m.isError || m.isEOS
                case .message(let match): m.isError || match(m)
                case .timeout: m.isError
                }
            }
            if m.isError {
                outcome = .error(m)
            } else if case .eos = stop {
                outcome = .eos
            } else {
                outcome = .matched(m)
            }
        } catch .timedOut {
            outcome = .timedOut
        } catch {
            outcome = .startFailed(error)
        }
        self.stop()
        return PipelineReport(description: description, outcome: outcome, messages: collectedMessages)
    }
}

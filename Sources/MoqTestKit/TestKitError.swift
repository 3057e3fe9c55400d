// SPDX-License-Identifier: MIT
public import MoqPipeline

/// Why a test-kit helper failed; the text says what happened and, where it helps, what was seen instead.
public enum TestKitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The in-process relay could not start or restart.
    case relay(String)
    /// The UDP proxy could not start.
    case proxy(String)
    /// A pipeline operation failed.
    case pipeline(PipelineError)
    /// The named element is not of the kind the helper needs (`appsrc`, `appsink`).
    case wrongElement(name: String, expected: String, found: String)
    /// GStreamer refused a buffer or event; the flow return's name (`flushing`, `not-negotiated`, `eos`).
    case flow(String)
    /// A GstHarness could not be made.
    case harness(String)
    /// Subscribing to a track failed, or the track ended with an error.
    case subscription(String)
    /// Nothing arrived before the timeout; says what was awaited.
    case timedOut(String)
    /// An assertion helper's expectation did not hold.
    case expectationFailed(String)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .relay(let m): "test relay: \(m)"
        case .proxy(let m): "UDP proxy: \(m)"
        case .pipeline(let e): e.description
        case .wrongElement(let n, let expected, let found): "element \"\(n)\" is a \(found), not a \(expected)"
        case .flow(let m): "GStreamer refused it: \(m)"
        case .harness(let m): "harness: \(m)"
        case .subscription(let m): "subscription: \(m)"
        case .timedOut(let what): "timed out waiting for \(what)"
        case .expectationFailed(let m): m
        }
    }
}

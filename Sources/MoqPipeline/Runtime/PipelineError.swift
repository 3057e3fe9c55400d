// SPDX-License-Identifier: MIT

/// Why building, running or waiting on a pipeline failed.
public enum PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The description did not parse or link; the parser's message (`no element "nosuch"`).
    case parse(String)
    /// A state change failed; the ERROR the pipeline posted, when it posted one.
    case stateChange(String)
    /// The pipeline posted an ERROR while being waited on (`source: message (debug)`).
    case failed(String)
    /// Nothing matched before the timeout; says what was awaited.
    case timedOut(String)
    /// The pipeline is not running (never started, or stopped while being waited on).
    case notRunning
    /// The waiting task was cancelled.
    case cancelled
    /// No element of this name in the pipeline.
    case noSuchElement(String)
    /// The element has no such property.
    case noSuchProperty(element: String, property: String)
    /// The value cannot be converted to the property's type, or is out of its range.
    case invalidValue(element: String, property: String, value: String, reason: String)
    /// An event was refused (EOS sent to a pipeline that cannot take it, …).
    case eventRefused(String)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .parse(let m): "cannot build the pipeline: \(m)"
        case .stateChange(let m): "state change failed: \(m)"
        case .failed(let m): "pipeline error: \(m)"
        case .timedOut(let what): "timed out waiting for \(what)"
        case .notRunning: "the pipeline is not running"
        case .cancelled: "cancelled"
        case .noSuchElement(let n): "no element named \"\(n)\" in the pipeline"
        case .noSuchProperty(let e, let p): "element \"\(e)\" has no property \"\(p)\""
        case .invalidValue(let e, let p, let v, let r): "cannot set \(e).\(p) to \(v): \(r)"
        case .eventRefused(let m): "event refused: \(m)"
        }
    }
}

// SPDX-License-Identifier: MIT

/// A message from a pipeline's bus, copied into Swift values.
public enum BusMessage: Sendable, Hashable, CustomStringConvertible {
    /// An ERROR: the pipeline cannot continue. `domain` is the GError domain
    /// (`gst-resource-error-quark`), `code` its code in that domain.
    case error(source: String, domain: String, code: Int, message: String, debug: String?)
    /// A WARNING: something went wrong and the element carries on (`moqsink` while reconnecting).
    case warning(source: String, domain: String, code: Int, message: String, debug: String?)
    /// An INFO message.
    case info(source: String, domain: String, code: Int, message: String, debug: String?)
    /// End of stream: every sink received EOS.
    case eos(source: String)
    /// An element changed state.
    case stateChanged(source: String, old: PipelineState, new: PipelineState)
    /// An element message: its structure's name, its fields as Swift values, and its serialisation.
    case element(source: String, structureName: String, fields: [String: PipelineValue], structure: String)
    /// The streams an element offers (`GstStreamCollection`).
    case streamCollection(source: String, streams: [StreamInfo])
    /// An element's latency changed; the application should recalculate it (``Pipeline`` does).
    case latency(source: String)
    /// Any other message, by its GStreamer type name (`async-done`, `new-clock`, `stream-start`).
    case other(source: String, type: String)

    /// The name of the object that posted the message.
    public var source: String {
        switch self {
        case .error(let s, _, _, _, _), .warning(let s, _, _, _, _), .info(let s, _, _, _, _), .eos(let s),
            .stateChanged(let s, _, _), .element(let s, _, _, _), .streamCollection(let s, _), .latency(let s),
            .other(let s, _):
            s
        }
    }

    /// The text of an error, warning or info message.
    public var text: String? {
        switch self {
        case .error(_, _, _, let m, _), .warning(_, _, _, let m, _), .info(_, _, _, let m, _): m
        default: nil
        }
    }

    /// The debug text of an error, warning or info message (where the element gave one).
    public var debug: String? {
        switch self {
        case .error(_, _, _, _, let d), .warning(_, _, _, _, let d), .info(_, _, _, _, let d): d
        default: nil
        }
    }

    /// An element message's structure name (`moqsink-connection`, `GstMultiQueue…`), nil for other messages.
    public var structureName: String? {
        if case .element(_, let name, _, _) = self { return name }
        return nil
    }

    /// An element message's structure, serialised as GStreamer prints it; nil for other messages.
    public var structure: String? {
        if case .element(_, _, _, let structure) = self { return structure }
        return nil
    }

    /// A stream collection's streams; nil for other messages.
    public var streams: [StreamInfo]? {
        if case .streamCollection(_, let streams) = self { return streams }
        return nil
    }

    /// Whether this is an ``error(source:domain:code:message:debug:)``.
    public var isError: Bool {
        if case .error = self { return true }
        return false
    }

    /// Whether this is a ``warning(source:domain:code:message:debug:)``.
    public var isWarning: Bool {
        if case .warning = self { return true }
        return false
    }

    /// Whether this is an ``eos(source:)``.
    public var isEOS: Bool {
        if case .eos = self { return true }
        return false
    }

    /// One line: `ERROR from src: message (debug)`.
    public var description: String {
        switch self {
        case .error(let s, _, _, let m, let d): "ERROR from \(s): \(m)\(d.map { " (\($0))" } ?? "")"
        case .warning(let s, _, _, let m, let d): "WARNING from \(s): \(m)\(d.map { " (\($0))" } ?? "")"
        case .info(let s, _, _, let m, let d): "INFO from \(s): \(m)\(d.map { " (\($0))" } ?? "")"
        case .eos(let s): "EOS from \(s)"
        case .stateChanged(let s, let old, let new): "\(s): \(old) -> \(new)"
        case .element(let s, _, _, let structure): "element message from \(s): \(structure)"
        case .streamCollection(let s, let streams): "stream collection from \(s): \(streams.map(\.id))"
        case .latency(let s): "latency from \(s)"
        case .other(let s, let t): "\(t) from \(s)"
        }
    }
}

/// One stream of a ``BusMessage/streamCollection(source:streams:)``.
public struct StreamInfo: Sendable, Hashable {
    /// The stream id.
    public var id: String
    /// The stream type names (`video`, `audio`, `text`, `container`, `unknown`).
    public var types: [String]
    /// The caps, when known.
    public var caps: String?

    /// A stream description.
    public init(id: String, types: [String], caps: String?) {
        self.id = id
        self.types = types
        self.caps = caps
    }
}

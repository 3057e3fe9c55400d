// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

/// An event a test sends into a ``Harness``.
public enum HarnessEvent: Sendable, Hashable {
    /// End of stream.
    case eos
    /// Start flushing.
    case flushStart
    /// Stop flushing (resetting running time when `resetTime`).
    case flushStop(resetTime: Bool)
    /// A new stream with this id.
    case streamStart(String)
    /// No data from `pts` for `duration`.
    case gap(pts: Duration, duration: Duration?)

    func make() -> UnsafeMutablePointer<GstEvent> {
        switch self {
        case .eos: gst_event_new_eos()
        case .flushStart: gst_event_new_flush_start()
        case .flushStop(let reset): gst_event_new_flush_stop(reset ? 1 : 0)
        case .streamStart(let id): gst_event_new_stream_start(id)
        case .gap(let pts, let duration):
            gst_event_new_gap(BufferConversion.clockTime(pts), BufferConversion.clockTime(duration))
        }
    }
}

/// An event an element sent, as Swift values.
public struct ReceivedEvent: Sendable, Hashable, CustomStringConvertible {
    /// GStreamer's name of the event type (`stream-start`, `caps`, `segment`, `eos`).
    public var type: String
    /// For a caps event, the caps.
    public var caps: String?
    /// The event's structure, serialised, when it has one.
    public var structure: String?

    /// Copies an event and releases it.
    init(_ event: UnsafeMutablePointer<GstEvent>) {
        defer { gst_event_unref(event) }
        let eventType = swiftmoq_event_type(event)
        type = gst_event_type_get_name(eventType).map { String(cString: $0) } ?? "unknown"
        if eventType == GST_EVENT_CAPS {
            var c: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &c)
            if let c { caps = capsString(c) }
        }
        if let s = gst_event_get_structure(event) { structure = takeString(gst_structure_to_string(s)) }
    }

    /// `type` and its caps or structure.
    public var description: String { [type, caps ?? structure].compactMap { $0 }.joined(separator: " ") }
}

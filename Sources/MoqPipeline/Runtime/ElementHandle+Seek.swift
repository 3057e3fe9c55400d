// SPDX-License-Identifier: MIT
import CGStreamer

/// Where a flushing TIME seek goes.
public enum SeekPosition: Sendable, Equatable {
    /// A position on the element's timeline (for `moqsrc` in long-form: the publisher's timestamp).
    case at(Duration)
    /// This far before the end (for `moqsrc`: behind the live edge; `.zero` is the edge).
    case beforeEnd(Duration)
}

extension ElementHandle {
    /// Sends a flushing TIME seek (rate 1.0) to the element; true when the element took it.
    @discardableResult
    public func seek(_ position: SeekPosition) -> Bool {
        func ns(_ d: Duration) -> Int64 {
            let (seconds, atto) = d.components
            let whole = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            return whole.overflow ? (seconds < 0 ? .min : .max) : whole.partialValue &+ atto / 1_000_000_000
        }
        let (type, start): (GstSeekType, Int64)
        switch position {
        case .at(let d): (type, start) = (GST_SEEK_TYPE_SET, max(0, ns(d)))
        case .beforeEnd(let d): (type, start) = (GST_SEEK_TYPE_END, -max(0, ns(d)))
        }
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue)
        guard let event = gst_event_new_seek(1.0, GST_FORMAT_TIME, flags, type, gint64(start), GST_SEEK_TYPE_NONE, -1)
        else { return false }
        return gst_element_send_event(object.pointer, event) != 0
    }
}

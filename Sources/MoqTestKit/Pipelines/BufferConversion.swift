// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

/// ``Sample`` ↔ `GstBuffer`, and `GstClockTime` ↔ `Duration?`.
enum BufferConversion {
    /// A new buffer with the sample's bytes, times and flags (one reference, owned by the caller).
    static func buffer(_ sample: Sample) -> UnsafeMutablePointer<GstBuffer> {
        let buffer = gst_buffer_new_allocate(nil, gsize(sample.bytes.count), nil)!
        sample.bytes.withUnsafeBytes { _ = gst_buffer_fill(buffer, 0, $0.baseAddress, gsize($0.count)) }
        swiftmoq_buffer_set_pts(buffer, clockTime(sample.pts))
        swiftmoq_buffer_set_dts(buffer, clockTime(sample.dts))
        swiftmoq_buffer_set_duration(buffer, clockTime(sample.duration))
        swiftmoq_buffer_set_flags(buffer, sample.flags.rawValue)
        return buffer
    }

    /// The sample a buffer carries (the buffer is only read).
    static func sample(_ buffer: UnsafeMutablePointer<GstBuffer>, caps: UnsafeMutablePointer<GstCaps>?) -> Sample {
        var bytes = [UInt8](repeating: 0, count: Int(gst_buffer_get_size(buffer)))
        bytes.withUnsafeMutableBytes { _ = gst_buffer_extract(buffer, 0, $0.baseAddress, gsize($0.count)) }
        var capsText: String?
        if let caps { capsText = capsString(caps) }
        var sample = Sample(
            bytes, pts: duration(swiftmoq_buffer_pts(buffer)), dts: duration(swiftmoq_buffer_dts(buffer)),
            duration: duration(swiftmoq_buffer_duration(buffer)),
            flags: BufferFlags(rawValue: swiftmoq_buffer_flags(buffer) & BufferFlags.bufferBits), caps: capsText)
        if let meta = gst_buffer_get_reference_timestamp_meta(buffer, publisherTimeCaps) {
            sample.publisherTime = duration(meta.pointee.timestamp)
        }
        return sample
    }

    /// The reference the publisher's timestamp meta is filed under (made once, never freed).
    private nonisolated(unsafe) static let publisherTimeCaps = gst_caps_new_empty_simple("timestamp/x-moq-publisher")

    /// `GST_CLOCK_TIME_NONE` for nil; negative durations are 0.
    static func clockTime(_ d: Duration?) -> GstClockTime {
        guard let d else { return swiftmoq_clock_time_none() }
        let (seconds, attoseconds) = d.components
        guard seconds >= 0 else { return 0 }
        return GstClockTime(seconds) * 1_000_000_000 + GstClockTime(attoseconds / 1_000_000_000)
    }

    /// nil for `GST_CLOCK_TIME_NONE`.
    static func duration(_ t: GstClockTime) -> Duration? {
        swiftmoq_clock_time_is_valid(t) != 0 ? .nanoseconds(Int64(t)) : nil
    }

    /// GStreamer's name for a flow return (`not-negotiated`).
    static func flowName(_ flow: GstFlowReturn) -> String {
        gst_flow_get_name(flow).map { String(cString: $0) } ?? "flow \(flow.rawValue)"
    }
}

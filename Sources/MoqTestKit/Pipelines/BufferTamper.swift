// SPDX-License-Identifier: MIT
import CGStreamer
public import MoqPipeline
import MoqSync

/// Tampers with the buffers leaving an element's pad, to reproduce a timing fault downstream
/// of a well-behaved source: timestamps that advance by less (or more) than the buffers last,
/// or a buffer lost.
///
/// ```swift
/// try pipeline.start(.ready)
/// // 20 ms buffers stamped 15 ms apart: a source whose clock runs slow.
/// let tamper = try BufferTamper.attach(.spacing(.milliseconds(15)), to: pipeline, element: "src")
/// try pipeline.setState(.playing)
/// ```
public final class BufferTamper: Sendable {
    /// What is done to the buffers.
    public enum Fault: Sendable, Equatable {
        /// The n-th buffer (from 0) is stamped at the first one's PTS plus n times this spacing;
        /// durations are left as they are.
        case spacing(Duration)
        /// These buffers (counted from 0) are dropped.
        case drop(Set<Int>)
    }

    private let fault: Fault
    private let state = Lock((seen: 0, dropped: 0, first: UInt64?.none))

    private init(_ fault: Fault) { self.fault = fault }

    /// Buffers that went through the pad (dropped ones included).
    public var buffersSeen: Int { state.withLock { $0.seen } }
    /// Buffers dropped.
    public var buffersDropped: Int { state.withLock { $0.dropped } }

    /// Attaches `fault` to the pad `pad` of the element `element` of a running `pipeline`.
    ///
    /// Attach it before the pipeline leaves READY (`start(.ready)`, attach, then PLAYING), so
    /// that the pad's streaming thread starts after it exists: attached to a thread already
    /// running, it reaches that thread under GLib's locks, which are enough for the program but
    /// invisible to ThreadSanitizer (which then reports the hand-over as a race).
    ///
    /// - Throws: ``TestKitError/pipeline(_:)`` when the pipeline is not running or has no such
    ///   element or pad.
    @discardableResult
    public static func attach(_ fault: Fault, to pipeline: Pipeline, element: String, pad: String = "src")
        throws(TestKitError) -> BufferTamper
    {
        let handle: ElementHandle
        do { handle = try pipeline.element(named: element) } catch { throw .pipeline(error) }
        guard let padRef = handle.pad(pad) else { throw .pipeline(.noSuchElement("\(element).\(pad)")) }
        let tamper = BufferTamper(fault)
        let context = Unmanaged.passRetained(tamper).toOpaque()
        gst_pad_add_probe(
            padRef.pointer, GST_PAD_PROBE_TYPE_BUFFER,
            { _, info, userData in
                guard let info, let userData else { return GST_PAD_PROBE_OK }
                return Unmanaged<BufferTamper>.fromOpaque(userData).takeUnretainedValue().tamper(info)
            }, context, { Unmanaged<BufferTamper>.fromOpaque($0!).release() })
        return tamper
    }

    private func tamper(_ info: UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn {
        guard let buffer = swiftmoq_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
        let pts = swiftmoq_buffer_pts(buffer)
        let (index, first) = state.withLock { s -> (Int, UInt64?) in
            defer { s.seen += 1 }
            if s.first == nil, swiftmoq_clock_time_is_valid(pts) != 0 { s.first = UInt64(pts) }
            return (s.seen, s.first)
        }
        switch fault {
        case .drop(let indices):
            guard indices.contains(index) else { return GST_PAD_PROBE_OK }
            state.withLock { $0.dropped += 1 }
            return GST_PAD_PROBE_DROP
        case .spacing(let spacing):
            guard let first else { return GST_PAD_PROBE_OK }
            let (seconds, attoseconds) = spacing.components
            let spacingNs = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            let writable = UnsafeMutableRawPointer(
                gst_mini_object_make_writable(
                    UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: GstMiniObject.self))
            )
            info.pointee.data = writable
            let stamped = Int64(first) + Int64(index) * spacingNs
            swiftmoq_buffer_set_pts(writable!.assumingMemoryBound(to: GstBuffer.self), GstClockTime(max(0, stamped)))
            return GST_PAD_PROBE_OK
        }
    }
}

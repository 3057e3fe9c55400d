// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
public import FoundationEssentials
import MoqPipeline
import MoqSync
import Synchronization

/// Sends app data (chat, telemetry, JSON) as frames of a data track (moq-kit's `DataTrackEmitter`).
///
/// Each ``send(_:)`` is one frame in a group of its own, stamped with the publisher's clock
/// (the same running time as the media), so a subscriber can line data up with audio and video.
/// Before the publisher starts, or after it stops, sends are dropped (and counted).
public final class DataTrackEmitter: Sendable {
    private let appsrc = Lock<ElementHandle?>(nil)
    private let dropped = Atomic<Int>(0)

    /// An emitter; hand it to ``Publisher/addDataTrack(name:source:)``.
    public init() {}

    /// Sends one frame. Returns false when it was dropped (publisher not running).
    @discardableResult
    public func send(_ data: Data) -> Bool {
        guard let handle = appsrc.withLock({ $0 }) else {
            dropped.add(1, ordering: .relaxed)
            return false
        }
        let buffer = gst_buffer_new_allocate(nil, gsize(data.count), nil)!
        _ = data.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize(data.count)) }
        let source = UnsafeMutableRawPointer(handle.object.pointer).assumingMemoryBound(to: GstAppSrc.self)
        return gst_app_src_push_buffer(source, buffer) == GST_FLOW_OK
    }

    /// Frames dropped because the publisher was not running.
    public var droppedCount: Int { dropped.load(ordering: .relaxed) }

    func attach(_ handle: ElementHandle?) { appsrc.withLock { $0 = handle } }

    /// The appsrc feeding moqsink's data pad.
    static func element(named name: String) -> Element {
        Element("appsrc", name: name).set("is-live", true).set("do-timestamp", true).set("format", .nick("time"))
            .set("caps", Caps("application/x-moq-data"))
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import GstSwiftMoQ
import MoqPipeline
import MoqSync
import MoqTestKit
import Testing

/// GStreamer set up once per test process, with the SwiftMoQ elements registered
/// statically (no plugin file involved).
enum GstTestEnvironment {
    static let ready: Bool = {
        gst_init(nil, nil)
        gst_plugin_swiftmoq_register()
        return true
    }()
}

/// A pipeline from a gst-launch description for the element tests: MoqPipeline's `Pipeline` (its bus
/// thread collects the messages, as other projects' tests get them), with the raw element access and
/// the non-waiting state changes these tests need.
final class TestPipeline: @unchecked Sendable {
    let base: Pipeline
    /// The GStreamer pipeline (valid while this object lives).
    let pipeline: UnsafeMutablePointer<GstElement>

    /// Builds the pipeline in NULL.
    /// - Throws: MoqPipeline's `PipelineError.parse` with the parser's message.
    init(_ description: String) throws {
        _ = GstTestEnvironment.ready
        base = Pipeline(launch: description)
        try base.start(.null)
        guard let element = base.gstPipeline?.pointer else { throw PipelineError.notRunning }
        pipeline = element
        gst_object_ref(UnsafeMutableRawPointer(element))  // held past a failed state change's stop
    }

    deinit {
        base.stop()
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(pipeline))
    }

    /// Sets the state without waiting for an asynchronous change to complete (ASYNC is returned
    /// as it is). Waiting here blocked a thread of Swift's cooperative pool for up to 10 s each
    /// time a live pipeline's sinks waited for their first buffer, stalling every other test.
    /// Tests wait for what they need (buffers, messages) asynchronously instead.
    ///
    /// A failed change stops the bus reading (joining its thread), as MoqPipeline's `setState` does,
    /// so the ERROR posted during the change is in ``errors`` when this returns.
    @discardableResult
    func setState(_ state: GstState) -> GstStateChangeReturn {
        let result = gst_element_set_state(pipeline, state)
        if result == GST_STATE_CHANGE_FAILURE { base.stop() }
        return result
    }

    func play() -> GstStateChangeReturn { setState(GST_STATE_PLAYING) }

    /// A queue without limits, for reading a file back through a demuxer: when the file starts
    /// with more than a second of one stream before the first buffer of another (a slow start
    /// under load), bounded queues deadlock the preroll.
    static let unboundedQueue = "queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"

    /// Every message collected so far.
    var collected: [BusMessage] { base.collectedMessages }

    var errors: [BusMessage] { collected.filter(\.isError) }
    var warnings: [BusMessage] { collected.filter(\.isWarning) }

    /// Waits until a message of this run matches (or the timeout passes), ERROR messages included:
    /// MoqPipeline's `waitForMessage`, whose matcher may read ``collected``.
    @discardableResult
    func waitFor(
        _ timeout: Duration = .seconds(20), _ match: @escaping @Sendable (BusMessage) -> Bool
    ) async throws -> BusMessage {
        try await base.waitForMessage(timeout: timeout, match)
    }

    /// The element with this name in the pipeline.
    func element(_ name: String) -> UnsafeMutablePointer<GstElement>? {
        gst_bin_get_by_name(UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self), name)
    }
}

/// Sets a property of an element the test holds, converted to the property's type by MoqPipeline
/// (as `ElementHandle.set` does: numbers range-checked, enum nicks and caps strings read as gst-launch
/// reads them). A value the property refuses is recorded as a test issue.
func setProperty(
    _ element: UnsafeMutablePointer<GstElement>, _ name: String, _ value: some PipelineValueConvertible,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    gst_object_ref(UnsafeMutableRawPointer(element))
    do { try ElementHandle(owning: element).set(name, value) } catch {
        Issue.record("setting \(name): \(error)", sourceLocation: sourceLocation)
    }
}

/// Reads a `guint` property.
func uintProperty(_ element: UnsafeMutablePointer<GstElement>, _ name: String) -> UInt32 {
    var value = GValue()
    g_value_init(&value, swiftmoq_type_uint())
    defer { g_value_unset(&value) }
    g_object_get_property(UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self), name, &value)
    return g_value_get_uint(&value)
}

/// Reads an enum or string property.
func stringProperty(_ element: UnsafeMutablePointer<GstElement>, _ name: String) -> String? {
    var value = GValue()
    let object = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self)
    let spec = g_object_class_find_property(
        UnsafeMutableRawPointer(object.pointee.g_type_instance.g_class).assumingMemoryBound(to: GObjectClass.self), name
    )!
    g_value_init(&value, spec.pointee.value_type)
    g_object_get_property(object, name, &value)
    defer { g_value_unset(&value) }
    if g_type_is_a(spec.pointee.value_type, swiftmoq_type_enum()) != 0 {
        let enumClass = g_type_class_ref(spec.pointee.value_type)
        defer { g_type_class_unref(enumClass) }
        let v = g_enum_get_value(
            UnsafeMutableRawPointer(enumClass!).assumingMemoryBound(to: GEnumClass.self), g_value_get_enum(&value))
        return v.map { String(cString: $0.pointee.value_nick) }
    }
    if spec.pointee.value_type == swiftmoq_type_string() {
        return g_value_get_string(&value).map { String(cString: $0) }
    }
    if let boxed = g_value_get_boxed(&value) {
        let text = gst_structure_to_string(
            UnsafeMutableRawPointer(mutating: boxed).assumingMemoryBound(to: GstStructure.self))!
        defer { g_free(text) }
        return String(cString: text)
    }
    return nil
}

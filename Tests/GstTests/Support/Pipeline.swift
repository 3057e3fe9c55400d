// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import GstSwiftMoQ
import MoqSync

/// GStreamer set up once per test process, with the SwiftMoQ elements registered
/// statically (no plugin file involved).
enum GstTestEnvironment {
    static let ready: Bool = {
        gst_init(nil, nil)
        gst_plugin_swiftmoq_register()
        return true
    }()
}

/// A bus message, copied out of GStreamer.
struct BusMessage: Sendable, CustomStringConvertible {
    enum Kind: Sendable { case error, warning, eos, element, stateChanged, streamCollection, other }
    var kind: Kind
    var source: String
    var text: String
    var debug: String
    /// For element messages: the structure name and its serialisation.
    var structureName: String?
    var structure: String?

    var description: String {
        "\(kind) from \(source): \(text)\(debug.isEmpty ? "" : " [\(debug)]")\(structure.map { " \($0)" } ?? "")"
    }
}

/// A pipeline from a gst-launch description, with its bus messages collected.
final class TestPipeline: @unchecked Sendable {
    let pipeline: UnsafeMutablePointer<GstElement>
    private let messages = Lock<[BusMessage]>([])
    private let bus: OpaquePointer?

    init(_ description: String) throws {
        _ = GstTestEnvironment.ready
        var error: UnsafeMutablePointer<GError>?
        let element = gst_parse_launch_full(description, nil, GST_PARSE_FLAG_FATAL_ERRORS, &error)
        if let error {
            let text = String(cString: error.pointee.message)
            g_error_free(error)
            throw PipelineError("cannot build the pipeline: \(text)")
        }
        guard let element else { throw PipelineError("cannot build the pipeline") }
        pipeline = element
        gst_object_ref_sink(element)
        bus = OpaquePointer(gst_element_get_bus(element))
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(bus))
        gst_object_unref(pipeline)
    }

    /// Sets the state without waiting for an asynchronous change to complete (ASYNC is returned
    /// as it is). Waiting here blocked a thread of Swift's cooperative pool for up to 10 s each
    /// time a live pipeline's sinks waited for their first buffer, stalling every other test.
    /// Tests wait for what they need (buffers, messages) asynchronously instead.
    @discardableResult
    func setState(_ state: GstState) -> GstStateChangeReturn {
        gst_element_set_state(pipeline, state)
    }

    func play() -> GstStateChangeReturn { setState(GST_STATE_PLAYING) }

    /// Pops pending bus messages into the collected list.
    func pump() {
        while let message = gst_bus_pop(UnsafeMutablePointer(bus)) {
            record(message)
            gst_message_unref(message)
        }
    }

    private func record(_ message: UnsafeMutablePointer<GstMessage>) {
        let source = message.pointee.src.map { String(cString: $0.pointee.name) } ?? "?"
        var entry = BusMessage(kind: .other, source: source, text: "", debug: "")
        switch message.pointee.type {
        case GST_MESSAGE_ERROR, GST_MESSAGE_WARNING:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            if message.pointee.type == GST_MESSAGE_ERROR {
                gst_message_parse_error(message, &error, &debug)
                entry.kind = .error
            } else {
                gst_message_parse_warning(message, &error, &debug)
                entry.kind = .warning
            }
            entry.text = error.map { String(cString: $0.pointee.message) } ?? ""
            entry.debug = debug.map { String(cString: $0) } ?? ""
            if let error { g_error_free(error) }
            g_free(debug)
        case GST_MESSAGE_EOS:
            entry.kind = .eos
        case GST_MESSAGE_ELEMENT:
            entry.kind = .element
            if let s = gst_message_get_structure(message) {
                entry.structureName = String(cString: gst_structure_get_name(s))
                let text = gst_structure_to_string(s)!
                entry.structure = String(cString: text)
                g_free(text)
            }
        case GST_MESSAGE_STATE_CHANGED:
            entry.kind = .stateChanged
        case GST_MESSAGE_STREAM_COLLECTION:
            entry.kind = .streamCollection
            var collection: UnsafeMutablePointer<GstStreamCollection>?
            gst_message_parse_stream_collection(message, &collection)
            if let collection {
                entry.text = (0..<gst_stream_collection_get_size(collection)).compactMap { i in
                    gst_stream_collection_get_stream(collection, i).flatMap { gst_stream_get_stream_id($0) }
                        .map { String(cString: $0) }
                }.joined(separator: " ")
                gst_object_unref(collection)
            }
        default:
            return
        }
        messages.withLock { $0.append(entry) }
    }

    /// A queue without limits, for reading a file back through a demuxer: when the file starts
    /// with more than a second of one stream before the first buffer of another (a slow start
    /// under load), bounded queues deadlock the preroll.
    static let unboundedQueue = "queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"

    /// Every message collected so far.
    var collected: [BusMessage] {
        pump()
        return messages.withLock { $0 }
    }

    var errors: [BusMessage] { collected.filter { $0.kind == .error } }
    var warnings: [BusMessage] { collected.filter { $0.kind == .warning } }

    /// Waits until a message matches (or the timeout passes), pumping the bus.
    @discardableResult
    func waitFor(_ timeout: Duration = .seconds(20), _ match: (BusMessage) -> Bool) async throws -> BusMessage {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let m = collected.first(where: match) { return m }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw PipelineError("timed out; messages: \(collected.filter { $0.kind != .stateChanged })")
    }

    /// The element with this name in the pipeline.
    func element(_ name: String) -> UnsafeMutablePointer<GstElement>? {
        gst_bin_get_by_name(UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self), name)
    }
}

struct PipelineError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
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

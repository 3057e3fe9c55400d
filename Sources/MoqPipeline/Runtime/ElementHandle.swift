// SPDX-License-Identifier: MIT
package import CGStreamer
package import GstSupport

/// An element of a running pipeline, found by name: its properties can be read and changed.
///
/// ```swift
/// let sink = try pipeline.element(named: "moq")
/// try sink.property("status")          // .nick("connected")
/// try sink.set("tls-disable-verify", true)
/// ```
///
/// Child-proxy paths work too (`try sink.property("sink_0::track")`).
public final class ElementHandle: Sendable {
    /// The element (one owned reference), for code in this package that needs the C object.
    package let object: ObjectRef<GstElement>
    /// The element's name.
    public let name: String

    package init(owning element: UnsafeMutablePointer<GstElement>) {
        object = ObjectRef(owning: element)
        name = object.name
    }

    /// The element's factory name (`moqsink`), if it was made by a factory.
    public var factoryName: String? {
        guard let factory = gst_element_get_factory(object.pointer) else { return nil }
        return takeString(gst_object_get_name(UnsafeMutableRawPointer(factory).assumingMemoryBound(to: GstObject.self)))
    }

    /// The current value of a property, converted to a Swift value (nil for a NULL string, caps or object).
    public func property(_ property: String) throws(PipelineError) -> PipelineValue? {
        let (target, spec) = try lookup(property)
        defer { g_object_unref(target) }
        guard spec.pointee.flags.rawValue & G_PARAM_READABLE.rawValue != 0 else {
            throw .noSuchProperty(element: name, property: "\(property) (write-only)")
        }
        var value = GValue()
        swiftmoq_value_init(&value, spec.pointee.value_type)
        defer { g_value_unset(&value) }
        g_object_get_property(target, spec.pointee.name, &value)
        return GValueReading.value(&value)
    }

    /// Sets a property, converting `value` to the property's type (numbers are range-checked; strings are
    /// read the way gst-launch reads them, so enum nicks and caps strings work).
    public func set(_ property: String, _ value: some PipelineValueConvertible) throws(PipelineError) {
        try set(property, value.pipelineValue)
    }

    /// Sets a property from a typed value (`try element.set("pattern", .nick("ball"))`).
    public func set(_ property: String, _ value: PipelineValue) throws(PipelineError) {
        let (target, spec) = try lookup(property)
        defer { g_object_unref(target) }
        guard spec.pointee.flags.rawValue & G_PARAM_WRITABLE.rawValue != 0 else {
            throw .invalidValue(element: name, property: property, value: "\(value)", reason: "read-only")
        }
        var v = GValue()
        defer { g_value_unset(&v) }
        if let reason = GValueWriting.store(value, into: &v, spec: spec) {
            throw .invalidValue(element: name, property: property, value: "\(value)", reason: reason)
        }
        g_object_set_property(target, spec.pointee.name, &v)
    }

    /// The object that owns `property` (one reference the caller releases) and its spec.
    private func lookup(_ property: String) throws(PipelineError) -> (
        UnsafeMutablePointer<GObject>, UnsafeMutablePointer<GParamSpec>
    ) {
        let raw = UnsafeMutableRawPointer(object.pointer)
        if property.contains("::"), swiftmoq_is_child_proxy(raw) != 0 {
            var target: UnsafeMutablePointer<GObject>?
            var spec: UnsafeMutablePointer<GParamSpec>?
            let proxy = OpaquePointer(raw)
            if gst_child_proxy_lookup(proxy, property, &target, &spec) != 0, let target, let spec {
                return (target, spec)
            }
            if let target { g_object_unref(target) }
            throw .noSuchProperty(element: name, property: property)
        }
        let instance = raw.assumingMemoryBound(to: GObject.self)
        let cls = UnsafeMutableRawPointer(instance.pointee.g_type_instance.g_class)
            .assumingMemoryBound(to: GObjectClass.self)
        guard let spec = g_object_class_find_property(cls, property) else {
            throw .noSuchProperty(element: name, property: property)
        }
        g_object_ref(instance)
        return (instance, spec)
    }

    /// A pad of the element (static, or a request pad already made), one owned reference; nil if none.
    package func pad(_ padName: String) -> ObjectRef<GstPad>? {
        gst_element_get_static_pad(object.pointer, padName).map { ObjectRef(owning: $0) }
    }
}

// SPDX-License-Identifier: MIT
package import CGStreamer

/// Bookkeeping for one GObject subclass implemented in Swift: its GType, the parent
/// class (to chain up) and where in each instance the Swift object lives.
///
/// C callbacks cannot capture context, so each element type keeps one of these in a
/// static; it is written once, during `class_init`, before any instance exists.
package final class SubclassInfo: @unchecked Sendable {
    package var type: GType = 0
    package var parentClass: UnsafeMutableRawPointer?
    /// Byte offset of the Swift-object pointer inside each instance.
    package var slot = 0

    /// Bookkeeping filled in by ``registerSubclass(parent:name:info:classInit:instanceInit:)``.
    package init() {}
}

/// Registers a static GObject subclass whose instances carry one extra pointer: the
/// Swift object that implements it (attached in `instanceInit`, released in finalize).
package func registerSubclass(
    parent: GType, name: String, info: SubclassInfo, classInit: GClassInitFunc, instanceInit: GInstanceInitFunc
) -> GType {
    var query = GTypeQuery()
    g_type_query(parent, &query)
    let slot = (Int(query.instance_size) + 7) & ~7
    info.slot = slot
    var typeInfo = GTypeInfo(
        class_size: guint16(query.class_size), base_init: nil, base_finalize: nil, class_init: classInit,
        class_finalize: nil, class_data: nil, instance_size: guint16(slot + MemoryLayout<UnsafeRawPointer>.size),
        n_preallocs: 0, instance_init: instanceInit, value_table: nil)
    info.type = g_type_register_static(parent, name, &typeInfo, GTypeFlags(rawValue: 0))
    return info.type
}

/// Attaches `object` to `instance` (retained until `detachObject`).
package func attachObject(_ object: AnyObject, to instance: UnsafeMutableRawPointer, info: SubclassInfo) {
    (instance + info.slot).storeBytes(of: Unmanaged.passRetained(object).toOpaque(), as: UnsafeMutableRawPointer.self)
}

/// The Swift object attached to `instance`.
package func attachedObject<T: AnyObject>(_ instance: UnsafeMutableRawPointer, info: SubclassInfo, as: T.Type) -> T {
    let raw = (instance + info.slot).load(as: UnsafeMutableRawPointer.self)
    return Unmanaged<T>.fromOpaque(raw).takeUnretainedValue()
}

/// Releases the Swift object attached to `instance` (from finalize).
package func detachObject(_ instance: UnsafeMutableRawPointer, info: SubclassInfo) {
    let raw = (instance + info.slot).load(as: UnsafeMutableRawPointer.self)
    Unmanaged<AnyObject>.fromOpaque(raw).release()
}

/// Reinterprets a C pointer (class or instance structs, which start with their parent's).
@inline(__always)
package func cast<T>(_ pointer: UnsafeMutableRawPointer?, _: T.Type) -> UnsafeMutablePointer<T> {
    pointer!.assumingMemoryBound(to: T.self)
}

@inline(__always)
package func cast<T, U>(_ pointer: UnsafeMutablePointer<U>?, _: T.Type) -> UnsafeMutablePointer<T> {
    UnsafeMutableRawPointer(pointer!).assumingMemoryBound(to: T.self)
}

/// A C string that lives for the process (GObject keeps pointers to names, blurbs…).
package func leakedCString(_ s: String) -> UnsafePointer<CChar> {
    UnsafePointer(strdup(s)!)
}

/// Wraps a C pointer that is only handed across threads under GStreamer's own rules.
struct UncheckedPointer<T>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<T>
    init(_ pointer: UnsafeMutablePointer<T>) { self.pointer = pointer }
}

// SPDX-License-Identifier: MIT
import CGStreamer

/// One owned reference to a GStreamer object, released when this goes away.
///
/// `@unchecked Sendable`: the pointer never changes, GStreamer objects are reference-counted atomically,
/// and the calls made through it (state changes, property access, bus and pad functions) are documented
/// as thread-safe by GStreamer.
package final class ObjectRef<Object>: @unchecked Sendable {
    /// The object.
    package let pointer: UnsafeMutablePointer<Object>

    /// Takes over a reference the caller owns.
    package init(owning pointer: UnsafeMutablePointer<Object>) {
        self.pointer = pointer
    }

    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    /// The object's name (`gst_object_get_name`).
    package var name: String {
        takeString(gst_object_get_name(UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GstObject.self))) ?? ""
    }
}

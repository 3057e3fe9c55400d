// SPDX-License-Identifier: MIT
import CGStreamer

/// An owned `GstContext` reference (a mini object, not a `GstObject`), released when dropped:
/// what an application hands a pipeline's elements to share something (a display, a connection).
///
/// `@unchecked Sendable`: contexts are immutable once made and reference-counted atomically.
package final class OwnedContext: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Adopts a reference (transfer full).
    package init(adopting pointer: OpaquePointer) { self.pointer = pointer }

    deinit { gst_mini_object_unref(UnsafeMutablePointer<GstMiniObject>(pointer)) }
}

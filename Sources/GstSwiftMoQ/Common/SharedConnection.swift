// SPDX-License-Identifier: MIT
import CGStreamer
package import GstSupport
import MoqSync
package import SwiftMoQ

/// One relay connection shared by several elements and the application (MoqKit's Session, its
/// Players and Publishers), handed to the elements as a `GstContext` of type
/// ``contextType`` — GStreamer's way of sharing a display or a device between elements.
///
/// The context names the connection by a number in a process-wide registry of weak references,
/// so a context that outlives its connection names nothing instead of a freed object. An element
/// uses the shared connection when its `url` property is unset or names the same relay; it
/// listens to it while running and leaves it open when it stops (its owner stops it).
package enum SharedConnection {
    /// The context type the elements look for.
    package static let contextType = "swiftmoq.connection"

    private static let registry = Lock<(entries: [UInt64: WeakReference<ReconnectingSession>], next: UInt64)>(([:], 1))

    /// A context naming `connection`, for ``MoqPipeline/Pipeline/provide(_:)``.
    package static func context(for connection: ReconnectingSession) -> OwnedContext {
        let id = registry.withLock { r -> UInt64 in
            r.entries = r.entries.filter { $0.value.value != nil }
            if let existing = r.entries.first(where: { $0.value.value === connection }) { return existing.key }
            let id = r.next
            r.next += 1
            r.entries[id] = WeakReference(connection)
            return id
        }
        let context = gst_context_new(contextType, 1)!
        let structure = gst_context_writable_structure(context)
        var value = GValue()
        FieldValue.uint64(id).store(into: &value)
        gst_structure_take_value(structure, "connection-id", &value)
        var url = GValue()
        FieldValue.string(connection.url.redacted).store(into: &url)
        gst_structure_take_value(structure, "url", &url)
        return OwnedContext(adopting: context)
    }

    /// The connection a context of ``contextType`` names, if it is still alive.
    package static func connection(in context: OpaquePointer) -> ReconnectingSession? {
        guard let type = gst_context_get_context_type(context), String(cString: type) == contextType,
            let structure = gst_context_get_structure(context)
        else { return nil }
        var id: guint64 = 0
        guard gst_structure_get_uint64(structure, "connection-id", &id) != 0 else { return nil }
        return registry.withLock { $0.entries[UInt64(id)]?.value }
    }
}

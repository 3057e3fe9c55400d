// SPDX-License-Identifier: MIT
import CGStreamer

/// `GstChildProxy` over an element's sink pads, so that gst-launch can set pad
/// properties with `moqsink sink_0::track=camera` (as moq-dev's moqsink allows).
enum ChildProxySupport {
    static func add(to type: GType) {
        var info = GInterfaceInfo(
            interface_init: { iface, _ in
                let proxy = cast(iface, GstChildProxyInterface.self)
                proxy.pointee.get_children_count = { parent in
                    let element = UnsafeMutableRawPointer(parent!).assumingMemoryBound(to: GstElement.self)
                    gst_object_lock(element)
                    defer { gst_object_unlock(element) }
                    return guint(element.pointee.numsinkpads)
                }
                proxy.pointee.get_child_by_index = { parent, index in
                    let element = UnsafeMutableRawPointer(parent!).assumingMemoryBound(to: GstElement.self)
                    gst_object_lock(element)
                    defer { gst_object_unlock(element) }
                    guard let node = g_list_nth(element.pointee.sinkpads, index), let pad = node.pointee.data else {
                        return nil
                    }
                    return UnsafeMutablePointer(OpaquePointer(gst_object_ref(pad)))
                }
            }, interface_finalize: nil, interface_data: nil)
        g_type_add_interface_static(type, gst_child_proxy_get_type(), &info)
    }
}

extension GstObject {}

/// `GST_OBJECT_LOCK` / `UNLOCK` (macros) on any GstObject-derived pointer.
func gst_object_lock<T>(_ object: UnsafeMutablePointer<T>) {
    let o = UnsafeMutableRawPointer(object).assumingMemoryBound(to: GstObject.self)
    g_mutex_lock(&o.pointee.lock)
}

func gst_object_unlock<T>(_ object: UnsafeMutablePointer<T>) {
    let o = UnsafeMutableRawPointer(object).assumingMemoryBound(to: GstObject.self)
    g_mutex_unlock(&o.pointee.lock)
}

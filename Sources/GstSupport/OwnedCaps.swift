// SPDX-License-Identifier: MIT
package import CGStreamer

/// An owned `GstCaps` reference, released when dropped.
package final class OwnedCaps {
    package let pointer: UnsafeMutablePointer<GstCaps>

    /// Adopts a reference (transfer full).
    package init(adopting pointer: UnsafeMutablePointer<GstCaps>) { self.pointer = pointer }

    /// Parses a caps string; nil when GStreamer cannot parse it.
    package convenience init?(parsing text: String) {
        GstInitialization.ensure()
        guard let caps = gst_caps_from_string(text) else { return nil }
        self.init(adopting: caps)
    }

    deinit { gst_caps_unref(pointer) }

    package var string: String { capsString(pointer) }
}

/// `gst_caps_to_string`, as a Swift string.
package func capsString(_ caps: UnsafePointer<GstCaps>) -> String {
    takeString(gst_caps_to_string(caps)) ?? ""
}

/// Adopts a string GLib allocated for us (transfer full): copies it and frees it.
package func takeString(_ text: UnsafeMutablePointer<gchar>?) -> String? {
    guard let text else { return nil }
    defer { g_free(text) }
    return String(cString: text)
}

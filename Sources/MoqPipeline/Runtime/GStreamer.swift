// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

/// Process-wide GStreamer set-up.
public enum GStreamer {
    /// Initialises GStreamer once per process (later calls do nothing, from any thread).
    ///
    /// The builder is generic: it knows no element of its own. An application that links
    /// SwiftMoQ's elements in registers them with `SwiftMoQElements.register()`.
    public static func initialize() { GstInitialization.ensure() }

    /// The GStreamer version in use (`1.22.0`).
    public static var version: String {
        initialize()
        var major: guint = 0
        var minor: guint = 0
        var micro: guint = 0
        var nano: guint = 0
        gst_version(&major, &minor, &micro, &nano)
        return "\(major).\(minor).\(micro)"
    }

    /// Whether an element factory of this name is available.
    public static func hasElement(_ factory: String) -> Bool {
        initialize()
        guard let f = gst_element_factory_find(factory) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(f))
        return true
    }
}

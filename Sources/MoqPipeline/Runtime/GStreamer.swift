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

extension GStreamer {
    /// GStreamer's debug levels, for ``setDebugThreshold(_:categories:)``.
    public enum DebugLevel: Int32, Sendable {
        case error = 1, warning, fixme, info, debug, log, trace = 7
    }

    /// Sets the debug threshold of the named categories (`gst_debug_set_threshold_for_name`): their
    /// lines at `level` and above go to GStreamer's log (standard error unless an application
    /// installed its own handler).
    public static func setDebugThreshold(_ level: DebugLevel, categories: [String]) {
        initialize()
        for name in categories { gst_debug_set_threshold_for_name(name, GstDebugLevel(UInt32(level.rawValue))) }
    }

    /// The debug threshold of the category named `name`, nil when no such category is registered.
    public static func debugThreshold(category name: String) -> DebugLevel? {
        initialize()
        guard let list = gst_debug_get_all_categories() else { return nil }
        defer { g_slist_free(list) }
        var node: UnsafeMutablePointer<GSList>? = list
        while let n = node {
            if let category = n.pointee.data?.assumingMemoryBound(to: GstDebugCategory.self),
                let categoryName = gst_debug_category_get_name(category), String(cString: categoryName) == name
            {
                return DebugLevel(rawValue: Int32(gst_debug_category_get_threshold(category).rawValue))
            }
            node = n.pointee.next
        }
        return nil
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import GstSwiftMoQ

/// Process-wide GStreamer set-up.
public enum GStreamer {
    private static let initialized: Bool = {
        gst_init(nil, nil)
        return true
    }()

    private static let registeredSwiftMoQ: Bool = {
        _ = initialized
        gst_plugin_swiftmoq_register()
        return true
    }()

    /// Initialises GStreamer once per process (later calls do nothing, from any thread).
    ///
    /// - Parameter registeringSwiftMoQ: also register this package's elements (`moqsink`, …) statically,
    ///   so that pipelines can use them without `libgstswiftmoq.so` being installed.
    public static func initialize(registeringSwiftMoQ: Bool = false) {
        _ = initialized
        if registeringSwiftMoQ { _ = registeredSwiftMoQ }
    }

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

// SPDX-License-Identifier: MIT
import GstSupport

/// Makes `moqsrc` and `moqsink` available to pipelines built in this process, without
/// `libgstswiftmoq.so` being installed: what applications and tests that link the elements in
/// call before building a pipeline.
public enum SwiftMoQElements {
    private static let registered: Void = {
        GstInitialization.ensure()
        gst_plugin_swiftmoq_register()
    }()

    /// Initialises GStreamer if needed and registers the elements statically, once per process
    /// (later calls return at once, from any thread).
    public static func register() { _ = registered }
}

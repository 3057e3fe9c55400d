// SPDX-License-Identifier: MIT
import CGStreamer

/// GStreamer's one initialisation for everything in this package: tools and tests that run
/// before any host application, the builder, the caps translators and the elements (where the
/// host already initialised it and this does nothing).
package enum GstInitialization {
    /// Initialises GStreamer once per process if the host has not; later calls return at once.
    ///
    /// Every entry point calls it first: caps parsed before `gst_init` crash in
    /// `gst_value_deserialize` (seen with a cold registry). Callers wait on one Swift once-token,
    /// so none proceeds while another thread is still inside `gst_init`.
    package static func ensure() { _ = done }

    private static let done: Void = {
        if gst_is_initialized() == 0 { gst_init(nil, nil) }
    }()
}

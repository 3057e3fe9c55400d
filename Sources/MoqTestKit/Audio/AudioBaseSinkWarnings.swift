// SPDX-License-Identifier: MIT
import CGStreamer
import CGstAudio
import GstSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// GstAudioBaseSink reports a resync ("Unexpected discontinuity in audio timestamps of
/// +0:00:00.045000000, resyncing") with GST_WARNING_OBJECT in its `audiobasesink` debug
/// category: a log line, not a bus message. This counts those lines for each
/// `moqtestaudiosink`, from a log function.
///
/// The category's threshold is raised to WARNING when it is below (and only then; the rest of
/// GStreamer's logging is untouched). So that the raise prints nothing the user did not ask
/// for, GStreamer's default log function is replaced by this one, which forwards to it every
/// line it would have printed and swallows only the audiobasesink lines the raise added. With
/// `GST_DEBUG_FILE` set (the default function writes to a file this cannot reach) or the
/// default function already removed by the application, nothing is replaced: the extra lines
/// then print as they would with `GST_DEBUG=audiobasesink:2`.
enum AudioBaseSinkWarnings {
    /// The category and its threshold before any raise (read by the log function).
    private struct Setup: @unchecked Sendable {
        let category: UnsafeMutablePointer<GstDebugCategory>?
        let original: GstDebugLevel
        let mayReplaceDefault: Bool
    }

    /// Computed before the log function is installed, so the log function never waits on it
    /// (GStreamer logs from inside `gst_debug_add_log_function`).
    private static let setup: Setup = {
        GstInitialization.ensure()
        _ = gst_audio_base_sink_get_type()  // registers the category
        let category = _gst_debug_get_category("audiobasesink")
        let original = category.map { gst_debug_category_get_threshold($0) } ?? GST_LEVEL_NONE
        let file = getenv("GST_DEBUG_FILE").map { $0.pointee != 0 } ?? false
        return Setup(category: category, original: original, mayReplaceDefault: !file)
    }()

    /// Whether the log function stands in for GStreamer's default one.
    private static let forwarding = Atomic<Bool>(false)

    private static let installed: Void = {
        let setup = Self.setup
        gst_debug_add_log_function(logFunction, nil, nil)
        guard setup.mayReplaceDefault else { return }
        // Forward first, then remove: a line logged in between prints twice rather than never.
        forwarding.store(true, ordering: .releasing)
        if gst_debug_remove_log_function(gst_debug_log_default) == 0 {
            forwarding.store(false, ordering: .releasing)
        }
    }()

    /// Installs the log function once, and raises the category's threshold to WARNING when it
    /// is below (checked at every call: `gst_debug_set_threshold_from_string` may have reset it).
    static func ensure() {
        _ = installed
        guard let category = setup.category else { return }
        if gst_debug_category_get_threshold(category).rawValue < GST_LEVEL_WARNING.rawValue {
            gst_debug_category_set_threshold(category, GST_LEVEL_WARNING)
        }
    }

    private static let logFunction: GstLogFunction = { category, level, file, function, line, object, message, _ in
        let setup = AudioBaseSinkWarnings.setup
        let audioBaseSink = category != nil && category == setup.category
        if audioBaseSink, level == GST_LEVEL_WARNING, let object, let message {
            let instance = UnsafeMutableRawPointer(object)
            if g_type_check_instance_is_a(
                instance.assumingMemoryBound(to: GTypeInstance.self), RenderedAudioSinkType.type) != 0,
                let text = gst_debug_message_get(message)
            {
                RenderedAudioSinkType.device(instance).noteWarning(String(cString: text))
            }
        }
        guard AudioBaseSinkWarnings.forwarding.load(ordering: .acquiring) else { return }
        if audioBaseSink && level.rawValue > setup.original.rawValue { return }
        gst_debug_log_default(category, level, file, function, line, object, message, nil)
    }
}

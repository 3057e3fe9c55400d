// SPDX-License-Identifier: MIT
import CGStreamer

/// GStreamer error domains, as the element posts them.
enum GstErrorDomain {
    case core(GstCoreError)
    case resource(GstResourceError)
    case stream(GstStreamError)

    var quark: GQuark {
        switch self {
        case .core: swiftmoq_core_error_quark()
        case .resource: swiftmoq_resource_error_quark()
        case .stream: swiftmoq_stream_error_quark()
        }
    }

    var code: gint {
        switch self {
        case .core(let c): gint(c.rawValue)
        case .resource(let c): gint(c.rawValue)
        case .stream(let c): gint(c.rawValue)
        }
    }
}

/// Posting bus messages and writing GST_DEBUG logs for one element.
struct ElementReporter: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    let category: UnsafeMutablePointer<GstDebugCategory>

    /// An ERROR message: `text` says what to fix; `debug` adds detail.
    func error(
        _ domain: GstErrorDomain, _ text: String, debug: String? = nil, file: String = #fileID, line: Int = #line
    ) {
        post(GST_MESSAGE_ERROR, domain, text, debug: debug, file: file, line: line)
        log(GST_LEVEL_ERROR, text + (debug.map { " (\($0))" } ?? ""), file: file, line: line)
    }

    /// A WARNING message (transient trouble; the element keeps going).
    func warning(
        _ domain: GstErrorDomain, _ text: String, debug: String? = nil, file: String = #fileID, line: Int = #line
    ) {
        post(GST_MESSAGE_WARNING, domain, text, debug: debug, file: file, line: line)
        log(GST_LEVEL_WARNING, text + (debug.map { " (\($0))" } ?? ""), file: file, line: line)
    }

    private func post(
        _ type: GstMessageType, _ domain: GstErrorDomain, _ text: String, debug: String?, file: String, line: Int
    ) {
        // gst_element_message_full takes ownership of text and debug (g_free'd).
        let t = g_strdup(text)
        let d = debug.map { g_strdup($0) } ?? nil
        gst_element_message_full(element, type, domain.quark, domain.code, t, d, file, "", gint(line))
    }

    /// An element message with a structure (events and stats).
    func elementMessage(_ structure: UnsafeMutablePointer<GstStructure>) {
        let message = gst_message_new_element(
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), structure)
        gst_element_post_message(element, message)
    }

    /// A GST_DEBUG line in the element's category.
    func log(_ level: GstDebugLevel, _ text: @autoclosure () -> String, file: String = #fileID, line: Int = #line) {
        guard level.rawValue <= swiftmoq_debug_threshold(category).rawValue else { return }
        let object = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self)
        gst_debug_log_literal(category, level, file, "", gint(line), object, text())
    }
}

/// Creates a debug category once per name.
func debugCategory(_ name: String, _ description: String) -> UnsafeMutablePointer<GstDebugCategory> {
    _gst_debug_category_new(name, 0, description)
}

// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

extension BusMessage {
    /// The Swift form of a GStreamer message.
    init(_ m: UnsafeMutablePointer<GstMessage>) {
        let source = m.pointee.src.flatMap { $0.pointee.name }.map { String(cString: $0) } ?? "?"
        switch swiftmoq_message_type(m) {
        case GST_MESSAGE_ERROR:
            let r = Self.report(m, gst_message_parse_error)
            self = .error(source: source, domain: r.domain, code: r.code, message: r.message, debug: r.debug)
        case GST_MESSAGE_WARNING:
            let r = Self.report(m, gst_message_parse_warning)
            self = .warning(source: source, domain: r.domain, code: r.code, message: r.message, debug: r.debug)
        case GST_MESSAGE_INFO:
            let r = Self.report(m, gst_message_parse_info)
            self = .info(source: source, domain: r.domain, code: r.code, message: r.message, debug: r.debug)
        case GST_MESSAGE_EOS:
            self = .eos(source: source)
        case GST_MESSAGE_STATE_CHANGED:
            var old = GST_STATE_VOID_PENDING
            var new = GST_STATE_VOID_PENDING
            var pending = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(m, &old, &new, &pending)
            self = .stateChanged(source: source, old: PipelineState(old), new: PipelineState(new))
        case GST_MESSAGE_ELEMENT:
            if let s = gst_message_get_structure(m) {
                let structure = GValueReading.structure(s)
                self = .element(
                    source: source, structureName: structure.name, fields: structure.dictionary,
                    structure: structure.serialized)
            } else {
                self = .other(source: source, type: "element")
            }
        case GST_MESSAGE_STREAM_COLLECTION:
            self = .streamCollection(source: source, streams: Self.streams(m))
        case GST_MESSAGE_LATENCY:
            self = .latency(source: source)
        default:
            let type = gst_message_type_get_name(swiftmoq_message_type(m)).map { String(cString: $0) } ?? "unknown"
            self = .other(source: source, type: type)
        }
    }

    private typealias Parse = (
        UnsafeMutablePointer<GstMessage>?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>?,
        UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
    ) -> Void

    private static func report(_ m: UnsafeMutablePointer<GstMessage>, _ parse: Parse) -> (
        domain: String, code: Int, message: String, debug: String?
    ) {
        var error: UnsafeMutablePointer<GError>?
        var debug: UnsafeMutablePointer<gchar>?
        parse(m, &error, &debug)
        defer {
            if let error { g_error_free(error) }
            g_free(debug)
        }
        let domain = error.flatMap { g_quark_to_string($0.pointee.domain) }.map { String(cString: $0) } ?? ""
        let message = error.flatMap { $0.pointee.message }.map { String(cString: $0) } ?? ""
        return (domain, Int(error?.pointee.code ?? 0), message, debug.map { String(cString: $0) })
    }

    private static func streams(_ m: UnsafeMutablePointer<GstMessage>) -> [StreamInfo] {
        var collection: UnsafeMutablePointer<GstStreamCollection>?
        gst_message_parse_stream_collection(m, &collection)
        guard let collection else { return [] }
        defer { gst_object_unref(UnsafeMutableRawPointer(collection)) }
        return (0..<gst_stream_collection_get_size(collection)).compactMap { i in
            guard let stream = gst_stream_collection_get_stream(collection, i) else { return nil }
            let id = gst_stream_get_stream_id(stream).map { String(cString: $0) } ?? ""
            let bits = gst_stream_get_stream_type(stream).rawValue
            let types = (0..<5).compactMap { shift -> String? in
                let bit = UInt32(1) << UInt32(shift)
                guard bits & bit != 0 else { return nil }
                return gst_stream_type_get_name(GstStreamType(rawValue: bit)).map { String(cString: $0) }
            }
            var caps: String?
            if let c = gst_stream_get_caps(stream) {
                caps = capsString(c)
                gst_caps_unref(c)
            }
            return StreamInfo(id: id, types: types, caps: caps)
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback

/// `GstURIHandler` for `moqsrc`: `playbin3 uri=moql://relay:4443/anon/room/cam` and
/// `uridecodebin3` find the element by scheme (`moql`, `moqt`). How the URI splits into
/// the connection URL and the broadcast is ``PlaybackURI``'s rule.
enum URIHandlerSupport {
    /// NULL-terminated list of schemes, kept for the process (GStreamer keeps the pointer).
    nonisolated(unsafe) static let protocols: UnsafeMutablePointer<UnsafePointer<CChar>?> = {
        let list = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: PlaybackURI.schemes.count + 1)
        for (i, scheme) in PlaybackURI.schemes.enumerated() { list[i] = leakedCString(scheme) }
        list[PlaybackURI.schemes.count] = nil
        return list
    }()

    static func add(to type: GType) {
        var info = GInterfaceInfo(
            interface_init: { iface, _ in
                let handler = cast(iface, GstURIHandlerInterface.self)
                handler.pointee.get_type = { _ in GST_URI_SRC }
                handler.pointee.get_protocols = { _ in
                    UnsafePointer(URIHandlerSupport.protocols)
                }
                handler.pointee.get_uri = { handler in
                    guard let uri = MoqSrcType.src(UnsafeMutableRawPointer(handler)).uri else { return nil }
                    return g_strdup(uri)
                }
                handler.pointee.set_uri = { handler, uri, error in
                    let text = uri.map { String(cString: $0) } ?? ""
                    switch MoqSrcType.src(UnsafeMutableRawPointer(handler)).setURI(text) {
                    case .success: return 1
                    case .failure(let problem):
                        g_set_error_literal(
                            error, gst_uri_error_quark(), gint(GST_URI_ERROR_BAD_URI.rawValue), problem.description)
                        return 0
                    }
                }
            }, interface_finalize: nil, interface_data: nil)
        g_type_add_interface_static(type, gst_uri_handler_get_type(), &info)
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqCatalog

/// Reads the tags SwiftMoQ carries from a `GstTagList` (not consumed).
struct TagReading {
    let list: UnsafeMutablePointer<GstTagList>
    init(_ list: UnsafeMutablePointer<GstTagList>) { self.list = list }

    func string(_ tag: String) -> String? {
        var value: UnsafeMutablePointer<gchar>?
        guard gst_tag_list_get_string(list, tag, &value) != 0, let value else { return nil }
        defer { g_free(value) }
        return String(cString: value)
    }

    func uint(_ tag: String) -> UInt32? {
        var value: guint = 0
        return gst_tag_list_get_uint(list, tag, &value) != 0 ? UInt32(value) : nil
    }

    /// The encoder's bitrate (bit/s): its maximum (x264enc), else nominal, else the bitrate tag.
    var bitrate: UInt64? {
        for tag in ["maximum-bitrate", "nominal-bitrate", "bitrate"] {
            if let v = uint(tag), v > 0 { return UInt64(v) }
        }
        return nil
    }

    func uint64(_ tag: String) -> UInt64? {
        var value: guint64 = 0
        return gst_tag_list_get_uint64(list, tag, &value) != 0 ? UInt64(value) : nil
    }

    /// An image tag's bytes and media type.
    func image(_ tag: String) -> (mimeType: String, data: [UInt8])? {
        var sample: OpaquePointer?
        guard gst_tag_list_get_sample(list, tag, &sample) != 0, let sample else { return nil }
        defer { gst_sample_unref(sample) }
        guard let buffer = gst_sample_get_buffer(sample) else { return nil }
        var mime = "application/octet-stream"
        if let caps = gst_sample_get_caps(sample), let structure = gst_caps_get_structure(caps, 0) {
            mime = String(cString: gst_structure_get_name(structure))
        }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return nil }
        defer { gst_buffer_unmap(buffer, &map) }
        return (mime, Array(UnsafeBufferPointer(start: map.data, count: Int(map.size))))
    }

    /// A tag list of what is playing, for moqsrc's TAG events and messages (the caller owns it).
    static func makeList(_ now: NowPlaying) -> UnsafeMutablePointer<GstTagList> {
        let list = gst_tag_list_new_empty()!
        func add(_ tag: String, string: String?) {
            guard let string else { return }
            var value = GValue()
            g_value_init(&value, swiftmoq_type_string())
            g_value_set_string(&value, string)
            gst_tag_list_add_value(list, GST_TAG_MERGE_REPLACE, tag, &value)
            g_value_unset(&value)
        }
        add("title", string: now.title)
        add("artist", string: now.artist)
        add("album", string: now.album)
        if let ms = now.durationMs {
            var value = GValue()
            g_value_init(&value, swiftmoq_type_uint64())
            g_value_set_uint64(&value, guint64(ms &* 1_000_000))
            gst_tag_list_add_value(list, GST_TAG_MERGE_REPLACE, "duration", &value)
            g_value_unset(&value)
        }
        if let art = now.artwork, let caps = gst_caps_new_empty_simple(art.mimeType) {
            let buffer = art.data.withUnsafeBytes { gst_buffer_new_memdup($0.baseAddress, gsize($0.count)) }
            if let buffer, let sample = gst_sample_new(buffer, caps, nil, nil) {
                var value = GValue()
                g_value_init(&value, gst_sample_get_type())
                g_value_take_boxed(&value, UnsafeRawPointer(sample))
                gst_tag_list_add_value(list, GST_TAG_MERGE_REPLACE, "image", &value)
                g_value_unset(&value)
            }
            if let buffer { gst_buffer_unref(buffer) }
            gst_caps_unref(caps)
        }
        return list
    }
}

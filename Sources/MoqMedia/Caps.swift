// SPDX-License-Identifier: MIT
import CGStreamer
import MoqBase

/// A caps string short enough for an error message (codec_data can be long).
func abbreviated(_ caps: String) -> String {
    caps.count > 240 ? String(caps.prefix(240)) + "…" : caps
}

/// Typed read access to the first structure of some caps.
struct CapsFields {
    let structure: UnsafeMutablePointer<GstStructure>

    init?(_ caps: UnsafePointer<GstCaps>) {
        guard gst_caps_get_size(caps) > 0, let s = gst_caps_get_structure(caps, 0) else { return nil }
        structure = s
    }

    var name: String { String(cString: gst_structure_get_name(structure)) }

    func has(_ field: String) -> Bool { gst_structure_has_field(structure, field) != 0 }

    func string(_ field: String) -> String? {
        guard let s = gst_structure_get_string(structure, field) else { return nil }
        return String(cString: s)
    }

    func int(_ field: String) -> Int? {
        var v: gint = 0
        return gst_structure_get_int(structure, field, &v) != 0 ? Int(v) : nil
    }

    func uint(_ field: String) -> Int? {
        var v: guint = 0
        return gst_structure_get_uint(structure, field, &v) != 0 ? Int(v) : nil
    }

    func fraction(_ field: String) -> (numerator: Int, denominator: Int)? {
        var n: gint = 0
        var d: gint = 0
        return gst_structure_get_fraction(structure, field, &n, &d) != 0 ? (Int(n), Int(d)) : nil
    }

    /// The bytes of a `(buffer)` field, such as `codec_data`.
    func buffer(_ field: String) -> [UInt8]? {
        guard let value = gst_structure_get_value(structure, field) else { return nil }
        return bufferBytes(value)
    }

    /// The buffers of a `(buffer)< … >` array field, such as `streamheader`.
    func bufferArray(_ field: String) -> [[UInt8]]? {
        guard let value = gst_structure_get_value(structure, field), value.pointee.g_type == gst_value_array_get_type()
        else { return nil }
        var out: [[UInt8]] = []
        for i in 0..<gst_value_array_get_size(value) {
            guard let element = gst_value_array_get_value(value, i), let bytes = bufferBytes(element) else {
                return nil
            }
            out.append(bytes)
        }
        return out
    }

    private func bufferBytes(_ value: UnsafePointer<GValue>) -> [UInt8]? {
        guard value.pointee.g_type == gst_buffer_get_type(), let boxed = g_value_get_boxed(value) else { return nil }
        let buffer = boxed.assumingMemoryBound(to: GstBuffer.self)
        return copyBytes(buffer)
    }
}

/// A copy of a buffer's contents.
func copyBytes(_ buffer: UnsafeMutablePointer<GstBuffer>) -> [UInt8] {
    let size = Int(gst_buffer_get_size(buffer))
    var bytes = [UInt8](repeating: 0, count: size)
    if size > 0 {
        let copied = bytes.withUnsafeMutableBytes { gst_buffer_extract(buffer, 0, $0.baseAddress, gsize(size)) }
        bytes.removeLast(size - Int(copied))
    }
    return bytes
}

/// A new buffer holding a copy of `bytes` (transfer full).
func makeBuffer(_ bytes: [UInt8]) -> UnsafeMutablePointer<GstBuffer> {
    bytes.withUnsafeBytes { gst_buffer_new_memdup($0.baseAddress, gsize($0.count)) }
}

/// Lowercase hex, as caps strings write `(buffer)` values.
func hexString(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

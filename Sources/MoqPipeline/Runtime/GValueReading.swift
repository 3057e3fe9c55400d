// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport

/// `GValue` → ``PipelineValue``, for properties, structure fields and message payloads.
enum GValueReading {
    /// The value, or nil for a NULL string, caps or structure.
    static func value(_ v: UnsafePointer<GValue>) -> PipelineValue? {
        let type = swiftmoq_value_type(v)
        switch g_type_fundamental(type) {
        case swiftmoq_type_boolean(): return .bool(g_value_get_boolean(v) != 0)
        case swiftmoq_type_char(): return .int(Int64(g_value_get_schar(v)))
        case swiftmoq_type_uchar(): return .uint(UInt64(g_value_get_uchar(v)))
        case swiftmoq_type_int(): return .int(Int64(g_value_get_int(v)))
        case swiftmoq_type_uint(): return .uint(UInt64(g_value_get_uint(v)))
        case swiftmoq_type_long(): return .int(Int64(g_value_get_long(v)))
        case swiftmoq_type_ulong(): return .uint(UInt64(g_value_get_ulong(v)))
        case swiftmoq_type_int64(): return .int(Int64(g_value_get_int64(v)))
        case swiftmoq_type_uint64(): return .uint(UInt64(g_value_get_uint64(v)))
        case swiftmoq_type_float(): return Float(g_value_get_float(v)).pipelineValue
        case swiftmoq_type_double(): return .double(g_value_get_double(v))
        case swiftmoq_type_string(): return g_value_get_string(v).map { .string(String(cString: $0)) }
        case swiftmoq_type_enum(): return enumNick(v, type).map(PipelineValue.nick)
        case swiftmoq_type_flags():
            let text = serialized(v) ?? ""
            return .flags(text.isEmpty ? [] : text.split(separator: "+").map { String($0) })
        default: return gstValue(v, type)
        }
    }

    /// GStreamer's own value types.
    private static func gstValue(_ v: UnsafePointer<GValue>, _ type: GType) -> PipelineValue? {
        switch type {
        case swiftmoq_type_fraction():
            return .fraction(Fraction(gst_value_get_fraction_numerator(v), gst_value_get_fraction_denominator(v)))
        case swiftmoq_type_caps():
            guard let caps = gst_value_get_caps(v) else { return nil }
            return .caps(Caps(capsString(caps)))
        case swiftmoq_type_structure():
            return gst_value_get_structure(v).map { .structure(structure($0)) }
        case swiftmoq_type_list():
            return .list((0..<gst_value_list_get_size(v)).compactMap { value(gst_value_list_get_value(v, $0)) })
        case swiftmoq_type_array():
            return .list((0..<gst_value_array_get_size(v)).compactMap { value(gst_value_array_get_value(v, $0)) })
        case swiftmoq_type_int_range():
            return .range(
                .int(Int64(gst_value_get_int_range_min(v))), .int(Int64(gst_value_get_int_range_max(v))))
        case swiftmoq_type_int64_range():
            return .range(
                .int(Int64(gst_value_get_int64_range_min(v))), .int(Int64(gst_value_get_int64_range_max(v))))
        case swiftmoq_type_double_range():
            return .range(.double(gst_value_get_double_range_min(v)), .double(gst_value_get_double_range_max(v)))
        case swiftmoq_type_fraction_range():
            guard let low = gst_value_get_fraction_range_min(v).flatMap(value),
                let high = gst_value_get_fraction_range_max(v).flatMap(value)
            else { return nil }
            return .range(low, high)
        case valueArrayType:
            // GValueArray (deprecated in GLib, still what `level` posts): read through its public fields.
            guard let boxed = g_value_get_boxed(v) else { return nil }
            let array = boxed.assumingMemoryBound(to: GValueArray.self).pointee
            guard let values = array.values else { return .list([]) }
            return .list((0..<Int(array.n_values)).compactMap { value(values + $0) })
        default:
            return serialized(v).map(PipelineValue.string)
        }
    }

    /// `G_TYPE_VALUE_ARRAY`, looked up by name (its getter is deprecated); 0 until GLib registers it.
    private static var valueArrayType: GType { g_type_from_name("GValueArray") }

    /// A structure with its fields converted (fields whose value is NULL are left out).
    static func structure(_ s: UnsafePointer<GstStructure>) -> Structure {
        let name = String(cString: gst_structure_get_name(s))
        var fields: [NamedValue] = []
        for i in 0..<gst_structure_n_fields(s) {
            guard let fieldName = gst_structure_nth_field_name(s, guint(i)),
                let v = gst_structure_get_value(s, fieldName), let converted = value(v)
            else { continue }
            fields.append(NamedValue(String(cString: fieldName), converted))
        }
        return Structure(name: name, fields: fields, serialized: takeString(gst_structure_to_string(s)) ?? name)
    }

    /// The nick of an enum value.
    private static func enumNick(_ v: UnsafePointer<GValue>, _ type: GType) -> String? {
        guard let cls = g_type_class_ref(type) else { return nil }
        defer { g_type_class_unref(cls) }
        let enumClass = cls.assumingMemoryBound(to: GEnumClass.self)
        guard let entry = g_enum_get_value(enumClass, g_value_get_enum(v)) else {
            return String(g_value_get_enum(v))
        }
        return String(cString: entry.pointee.value_nick)
    }

    /// `gst_value_serialize`.
    static func serialized(_ v: UnsafePointer<GValue>) -> String? {
        takeString(gst_value_serialize(v))
    }
}

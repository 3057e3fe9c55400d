// SPDX-License-Identifier: MIT
package import CGStreamer

/// A typed value for a GstStructure field or a property.
package enum FieldValue {
    case string(String)
    case bool(Bool)
    case int(Int32)
    case uint(UInt32)
    case uint64(UInt64)
    case int64(Int64)
    case double(Double)
    case structure(UnsafeMutablePointer<GstStructure>)  // taken (copied in)

    /// Initialises `value` (which must be zeroed) to this value.
    package func store(into value: UnsafeMutablePointer<GValue>) {
        switch self {
        case .string(let s):
            swiftmoq_value_init(value, swiftmoq_type_string())
            g_value_set_string(value, s)
        case .bool(let b):
            swiftmoq_value_init(value, swiftmoq_type_boolean())
            g_value_set_boolean(value, b ? 1 : 0)
        case .int(let i):
            swiftmoq_value_init(value, swiftmoq_type_int())
            g_value_set_int(value, i)
        case .uint(let u):
            swiftmoq_value_init(value, swiftmoq_type_uint())
            g_value_set_uint(value, u)
        case .uint64(let u):
            swiftmoq_value_init(value, swiftmoq_type_uint64())
            g_value_set_uint64(value, guint64(u))
        case .int64(let i):
            swiftmoq_value_init(value, swiftmoq_type_int64())
            g_value_set_int64(value, gint64(i))
        case .double(let d):
            swiftmoq_value_init(value, swiftmoq_type_double())
            g_value_set_double(value, d)
        case .structure(let s):
            swiftmoq_value_init(value, swiftmoq_type_structure())
            g_value_take_boxed(value, s)
        }
    }
}

/// Builds a GstStructure from ordered fields.
package func makeStructure(_ name: String, _ fields: [(String, FieldValue)]) -> UnsafeMutablePointer<GstStructure> {
    let structure = gst_structure_new_empty(name)!
    for (key, field) in fields {
        var value = GValue()
        field.store(into: &value)
        gst_structure_take_value(structure, key, &value)
    }
    return structure
}

/// Reads a string property value (copying it).
package func string(from value: UnsafePointer<GValue>?) -> String? {
    guard let p = g_value_get_string(value) else { return nil }
    return String(cString: p)
}

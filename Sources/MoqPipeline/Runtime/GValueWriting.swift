// SPDX-License-Identifier: MIT
import CGStreamer

/// ``PipelineValue`` → `GValue` of a property's type: typed where the kinds match (with range checks),
/// through GStreamer's deserialiser otherwise (enums by nick or name, flags, caps, fractions from text).
enum GValueWriting {
    /// Initialises `v` to `spec`'s type and stores `value`; returns why not, or nil on success.
    static func store(
        _ value: PipelineValue, into v: UnsafeMutablePointer<GValue>, spec: UnsafeMutablePointer<GParamSpec>
    ) -> String? {
        let type = spec.pointee.value_type
        swiftmoq_value_init(v, type)
        let typed = storeTyped(value, into: v, type: type)
        switch typed {
        case .stored:
            break
        case .outOfRange:
            return "out of range for \(typeName(type))"
        case .notApplicable:
            let text = rawText(value)
            if gst_value_deserialize_with_pspec(v, text, spec) == 0 {
                return "cannot read \"\(text)\" as \(typeName(type))"
            }
        }
        // Clamps numbers to the property's range and rejects unknown enum values; a change means invalid.
        if g_param_value_validate(spec, v) != 0 { return "out of the property's range" }
        return nil
    }

    private enum Outcome { case stored, outOfRange, notApplicable }

    private static func storeTyped(_ value: PipelineValue, into v: UnsafeMutablePointer<GValue>, type: GType) -> Outcome
    {
        let fundamental = g_type_fundamental(type)
        switch value {
        case .bool(let b) where fundamental == swiftmoq_type_boolean():
            g_value_set_boolean(v, b ? 1 : 0)
            return .stored
        case .int, .uint:
            return storeInteger(value, into: v, fundamental: fundamental)
        case .double(let d) where fundamental == swiftmoq_type_double():
            g_value_set_double(v, d)
            return .stored
        case .double(let d) where fundamental == swiftmoq_type_float():
            g_value_set_float(v, Float(d))
            return .stored
        case .string(let s) where fundamental == swiftmoq_type_string():
            g_value_set_string(v, s)
            return .stored
        case .fraction(let f) where type == swiftmoq_type_fraction():
            gst_value_set_fraction(v, f.numerator, f.denominator)
            return .stored
        default:
            return .notApplicable
        }
    }

    private static func storeInteger(_ value: PipelineValue, into v: UnsafeMutablePointer<GValue>, fundamental: GType)
        -> Outcome
    {
        let signed: Int64? = value.intValue
        let unsigned: UInt64? =
            switch value {
            case .uint(let u): u
            case .int(let i): UInt64(exactly: i)
            default: nil
            }
        func put<T: FixedWidthInteger>(_ as: T.Type, _ set: (T) -> Void) -> Outcome {
            if let s = signed, let x = T(exactly: s) {
                set(x)
                return .stored
            }
            if let u = unsigned, let x = T(exactly: u) {
                set(x)
                return .stored
            }
            return .outOfRange
        }
        switch fundamental {
        case swiftmoq_type_int(): return put(Int32.self) { g_value_set_int(v, $0) }
        case swiftmoq_type_uint(): return put(UInt32.self) { g_value_set_uint(v, $0) }
        case swiftmoq_type_long(): return put(Int.self) { g_value_set_long(v, $0) }
        case swiftmoq_type_ulong(): return put(UInt.self) { g_value_set_ulong(v, $0) }
        case swiftmoq_type_int64(): return put(Int64.self) { g_value_set_int64(v, gint64($0)) }
        case swiftmoq_type_uint64(): return put(UInt64.self) { g_value_set_uint64(v, guint64($0)) }
        case swiftmoq_type_char(): return put(Int8.self) { g_value_set_schar(v, $0) }
        case swiftmoq_type_uchar(): return put(UInt8.self) { g_value_set_uchar(v, $0) }
        case swiftmoq_type_double():
            g_value_set_double(v, value.doubleValue ?? 0)
            return .stored
        case swiftmoq_type_float():
            g_value_set_float(v, Float(value.doubleValue ?? 0))
            return .stored
        default: return .notApplicable
        }
    }

    /// The text GStreamer's deserialiser reads: what the parser sees once the quoting is undone.
    static func rawText(_ value: PipelineValue) -> String {
        switch value {
        case .string(let s), .nick(let s): s
        case .flags(let nicks): nicks.joined(separator: "+")
        case .caps(let c): c.description
        case .structure(let s): s.serialized
        case .list, .range: ValueRendering.caps(value)
        case .bool, .int, .uint, .double, .fraction: ValueRendering.property(value)
        }
    }

    private static func typeName(_ type: GType) -> String {
        g_type_name(type).map { String(cString: $0) } ?? "type \(type)"
    }
}

// SPDX-License-Identifier: MIT
package import CGStreamer

/// `GParamFlags` bits GStreamer adds (G_PARAM_USER_SHIFT = 8).
package enum ParamFlags {
    package static let readable = UInt32(bitPattern: G_PARAM_READABLE.rawValue)
    package static let writable = UInt32(bitPattern: G_PARAM_WRITABLE.rawValue)
    package static let readWrite = readable | writable
    /// `GST_PARAM_MUTABLE_READY`: may only change in NULL or READY.
    package static let mutableReady: UInt32 = 1 << 10
    /// `GST_PARAM_MUTABLE_PLAYING`: may change at any time.
    package static let mutablePlaying: UInt32 = 1 << 12
    /// `GST_PARAM_DOC_SHOW_DEFAULT`.
    package static let showDefault: UInt32 = 1 << 13
}

/// Declarative property specs (installed once in `class_init`; strings are leaked on purpose).
package enum Property {
    package static func string(
        _ name: String, _ nick: String, _ blurb: String, default value: String? = nil, flags: UInt32
    )
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_string(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), value.map(leakedCString),
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }

    package static func bool(_ name: String, _ nick: String, _ blurb: String, default value: Bool, flags: UInt32)
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_boolean(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), value ? 1 : 0,
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }

    package static func uint(
        _ name: String, _ nick: String, _ blurb: String, min: UInt32, max: UInt32, default value: UInt32, flags: UInt32
    )
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_uint(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), min, max, value,
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }

    package static func uint64(
        _ name: String, _ nick: String, _ blurb: String, min: UInt64 = 0, max: UInt64 = .max, default value: UInt64,
        flags: UInt32
    )
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_uint64(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), guint64(min), guint64(max), guint64(value),
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }

    package static func double(
        _ name: String, _ nick: String, _ blurb: String, min: Double, max: Double, default value: Double, flags: UInt32
    )
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_double(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), min, max, value,
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }

    package static func enumeration(
        _ name: String, _ nick: String, _ blurb: String, type: GType, default value: Int32, flags: UInt32
    )
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_enum(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), type, value,
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }

    package static func structure(_ name: String, _ nick: String, _ blurb: String, flags: UInt32)
        -> UnsafeMutablePointer<GParamSpec>
    {
        g_param_spec_boxed(
            leakedCString(name), leakedCString(nick), leakedCString(blurb), swiftmoq_type_structure(),
            GParamFlags(rawValue: Int32(bitPattern: flags)))
    }
}

/// Registers a GEnum type once (the value table is leaked: GObject keeps it).
func registerEnum(_ name: String, _ values: [(Int32, String, String)]) -> GType {
    let table = UnsafeMutablePointer<GEnumValue>.allocate(capacity: values.count + 1)
    for (i, (value, description, nick)) in values.enumerated() {
        table[i] = GEnumValue(value: value, value_name: leakedCString(description), value_nick: leakedCString(nick))
    }
    table[values.count] = GEnumValue(value: 0, value_name: nil, value_nick: nil)
    return g_enum_register_static(leakedCString(name), table)
}

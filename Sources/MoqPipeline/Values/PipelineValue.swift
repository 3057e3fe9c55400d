// SPDX-License-Identifier: MIT

/// A typed value for an element property or a caps field, rendered the way gst-launch-1.0 reads it and
/// converted to the property's `GValue` type when set on a running element.
///
/// Literals work directly (`"smpte"`, `true`, `60`, `0.5`); other Swift values convert through
/// ``PipelineValueConvertible``.
public indirect enum PipelineValue: Sendable, Hashable {
    /// A string (quoted and escaped in the description when it needs to be).
    case string(String)
    /// A boolean, rendered `true` / `false`.
    case bool(Bool)
    /// A signed integer.
    case int(Int64)
    /// An unsigned integer (in caps it renders with a `(uint)` or `(guint64)` type).
    case uint(UInt64)
    /// A floating-point number.
    case double(Double)
    /// A fraction, such as a frame rate.
    case fraction(Fraction)
    /// An enum value by its nick (`zerolatency`, `downstream`), rendered bare.
    case nick(String)
    /// Flags by their nicks, rendered `a+b`.
    case flags([String])
    /// Caps, such as an `appsrc`'s `caps` property.
    case caps(Caps)
    /// A list of alternatives (`{a,b}` in caps, `GST_TYPE_LIST`).
    case list([PipelineValue])
    /// An inclusive range (`[min,max]` in caps).
    case range(PipelineValue, PipelineValue)
    /// A structure, such as `moqsink`'s `stats` (read back from GStreamer).
    case structure(Structure)
}

extension PipelineValue {
    /// The string, when this is a ``string(_:)`` or a ``nick(_:)``.
    public var stringValue: String? {
        switch self {
        case .string(let s), .nick(let s): s
        default: nil
        }
    }

    /// The boolean, when this is a ``bool(_:)``.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The integer, when this is an ``int(_:)`` or a ``uint(_:)`` that fits.
    public var intValue: Int64? {
        switch self {
        case .int(let i): i
        case .uint(let u): Int64(exactly: u)
        default: nil
        }
    }

    /// The number, when this is a ``double(_:)`` or an integer.
    public var doubleValue: Double? {
        switch self {
        case .double(let d): d
        case .int(let i): Double(i)
        case .uint(let u): Double(u)
        default: nil
        }
    }

    /// The structure, when this is a ``structure(_:)``.
    public var structureValue: Structure? {
        if case .structure(let s) = self { return s }
        return nil
    }
}

extension PipelineValue: CustomStringConvertible {
    /// The value as it appears after `name=` in a gst-launch description.
    public var description: String { ValueRendering.property(self) }
}

extension PipelineValue: ExpressibleByStringLiteral {
    /// A ``string(_:)`` from a literal.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension PipelineValue: ExpressibleByIntegerLiteral {
    /// An ``int(_:)`` from a literal.
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension PipelineValue: ExpressibleByBooleanLiteral {
    /// A ``bool(_:)`` from a literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PipelineValue: ExpressibleByFloatLiteral {
    /// A ``double(_:)`` from a literal.
    public init(floatLiteral value: Double) { self = .double(value) }
}

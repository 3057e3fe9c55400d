// SPDX-License-Identifier: MIT

/// A Swift value that can be an element property or a caps field.
///
/// `String`, `Bool`, the integer types, `Double`, `Float`, `Duration` (in nanoseconds, GStreamer's time
/// unit), ``Fraction``, ``Caps`` and ``PipelineValue`` conform; so does any ``PipelineEnum``.
public protocol PipelineValueConvertible: Sendable {
    /// The typed value.
    var pipelineValue: PipelineValue { get }
}

/// A Swift enum whose raw values are a GStreamer enum's nicks, so that it renders as the nick:
///
/// ```swift
/// enum Tune: String, PipelineEnum { case zerolatency, fastdecode }
/// Element("x264enc").set("tune", Tune.zerolatency)   // x264enc tune=zerolatency
/// ```
public protocol PipelineEnum: PipelineValueConvertible, RawRepresentable where RawValue == String {}

extension PipelineEnum {
    /// ``PipelineValue/nick(_:)`` of the raw value.
    public var pipelineValue: PipelineValue { .nick(rawValue) }
}

extension PipelineValue: PipelineValueConvertible {
    /// Itself.
    public var pipelineValue: PipelineValue { self }
}

extension String: PipelineValueConvertible {
    /// ``PipelineValue/string(_:)``.
    public var pipelineValue: PipelineValue { .string(self) }
}

extension Substring: PipelineValueConvertible {
    /// ``PipelineValue/string(_:)``.
    public var pipelineValue: PipelineValue { .string(String(self)) }
}

extension Bool: PipelineValueConvertible {
    /// ``PipelineValue/bool(_:)``.
    public var pipelineValue: PipelineValue { .bool(self) }
}

extension Int: PipelineValueConvertible {
    /// ``PipelineValue/int(_:)``.
    public var pipelineValue: PipelineValue { .int(Int64(self)) }
}

extension Int32: PipelineValueConvertible {
    /// ``PipelineValue/int(_:)``.
    public var pipelineValue: PipelineValue { .int(Int64(self)) }
}

extension Int64: PipelineValueConvertible {
    /// ``PipelineValue/int(_:)``.
    public var pipelineValue: PipelineValue { .int(self) }
}

extension UInt: PipelineValueConvertible {
    /// ``PipelineValue/uint(_:)``.
    public var pipelineValue: PipelineValue { .uint(UInt64(self)) }
}

extension UInt32: PipelineValueConvertible {
    /// ``PipelineValue/uint(_:)``.
    public var pipelineValue: PipelineValue { .uint(UInt64(self)) }
}

extension UInt64: PipelineValueConvertible {
    /// ``PipelineValue/uint(_:)``.
    public var pipelineValue: PipelineValue { .uint(self) }
}

extension Double: PipelineValueConvertible {
    /// ``PipelineValue/double(_:)``.
    public var pipelineValue: PipelineValue { .double(self) }
}

extension Float: PipelineValueConvertible {
    /// ``PipelineValue/double(_:)`` with the float's shortest decimal form (`0.1`, not `0.10000000149…`).
    public var pipelineValue: PipelineValue { .double(Double(description) ?? Double(self)) }
}

extension Duration: PipelineValueConvertible {
    /// ``PipelineValue/uint(_:)`` in nanoseconds (GStreamer's `GstClockTime`); negative durations are 0.
    public var pipelineValue: PipelineValue {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .uint(0) }
        return .uint(UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000))
    }
}

extension Fraction: PipelineValueConvertible {
    /// ``PipelineValue/fraction(_:)``.
    public var pipelineValue: PipelineValue { .fraction(self) }
}

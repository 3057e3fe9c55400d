// SPDX-License-Identifier: MIT

/// Caps: a filter between two elements of a chain, or the value of a caps property.
///
/// ```swift
/// Caps("video/x-raw", ["format": "I420", "width": 1280, "framerate": Fraction(30, 1)])
/// // video/x-raw,format=I420,width=1280,framerate=30/1
/// Caps("video/x-h264,stream-format=avc,alignment=au")   // a caps string is written as given
/// ```
public struct Caps: PipelineComponent, PipelineValueConvertible, Hashable, CustomStringConvertible {
    /// The media type (`video/x-raw`), or a whole caps string written as given.
    public var mediaType: String
    /// Caps features (`memory:GLMemory`), written `video/x-raw(memory:GLMemory)`.
    public var features: [String]
    /// The fields, in their written order.
    public private(set) var fields: [NamedValue]

    /// Caps of `mediaType` with `features` and fields in their written order.
    public init(
        _ mediaType: String, features: [String] = [],
        _ fields: KeyValuePairs<String, any PipelineValueConvertible> = [:]
    ) {
        self.mediaType = mediaType
        self.features = features
        self.fields = Array(fields)
    }

    /// A copy with `field` set to `value`.
    public func set(_ field: String, _ value: some PipelineValueConvertible) -> Caps {
        var copy = self
        copy.fields.set(field, value.pipelineValue)
        return copy
    }

    /// A copy with `field` set to `value` (`.set("format", .list(["I420", "NV12"]))`).
    public func set(_ field: String, _ value: PipelineValue) -> Caps {
        var copy = self
        copy.fields.set(field, value)
        return copy
    }

    /// The value of `field`, if set.
    public subscript(field: String) -> PipelineValue? { fields[named: field] }

    /// The nodes: a caps filter.
    public var nodes: [PipelineNode] { [.caps(self)] }

    /// ``PipelineValue/caps(_:)``.
    public var pipelineValue: PipelineValue { .caps(self) }

    /// The caps string (`video/x-raw,format=I420,width=1280`).
    public var description: String {
        var out = mediaType
        if !features.isEmpty { out += "(\(features.joined(separator: ", ")))" }
        for f in fields { out += ",\(f.name)=\(ValueRendering.caps(f.value))" }
        return out
    }
}

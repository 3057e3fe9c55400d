// SPDX-License-Identifier: MIT

/// A name and its value: an element property, a caps field or a structure field, kept in order.
public struct NamedValue: Sendable, Hashable {
    /// The property or field name (`key-int-max`, `sink_0::track`, `framerate`).
    public var name: String
    /// The value.
    public var value: PipelineValue

    /// A name and its value.
    public init(_ name: String, _ value: PipelineValue) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == NamedValue {
    /// The value named `name`.
    subscript(named name: String) -> PipelineValue? { first { $0.name == name }?.value }

    /// Replaces the value named `name` in place, or appends it.
    mutating func set(_ name: String, _ value: PipelineValue) {
        if let i = firstIndex(where: { $0.name == name }) {
            self[i].value = value
        } else {
            append(NamedValue(name, value))
        }
    }

    /// The pairs of a dictionary literal, in their written order.
    init(_ pairs: KeyValuePairs<String, any PipelineValueConvertible>) {
        self = pairs.map { NamedValue($0.key, $0.value.pipelineValue) }
    }
}

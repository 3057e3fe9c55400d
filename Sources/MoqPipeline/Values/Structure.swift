// SPDX-License-Identifier: MIT

/// A `GstStructure` copied out of GStreamer: an element message's payload, or a property such as
/// `moqsink`'s `stats`.
public struct Structure: Sendable, Hashable, CustomStringConvertible {
    /// The structure name (`level`, `application/x-moqsink-stats`).
    public var name: String
    /// The fields in GStreamer's order.
    public var fields: [NamedValue]
    /// GStreamer's own serialisation (`gst_structure_to_string`).
    public var serialized: String

    /// A structure with these fields and serialisation.
    public init(name: String, fields: [NamedValue], serialized: String) {
        self.name = name
        self.fields = fields
        self.serialized = serialized
    }

    /// The value of a field.
    public subscript(field: String) -> PipelineValue? { fields[named: field] }

    /// The fields by name.
    public var dictionary: [String: PipelineValue] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The serialisation.
    public var description: String { serialized }
}

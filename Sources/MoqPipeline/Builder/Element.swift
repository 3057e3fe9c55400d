// SPDX-License-Identifier: MIT

/// An element of a pipeline description: a factory name, an optional name, and properties in the order
/// they were set.
///
/// ```swift
/// Element("videotestsrc").set("is-live", true).set("pattern", "smpte")   // videotestsrc is-live=true pattern=smpte
/// Element("moqsink", name: "moq").set("url", url).set("sink_0::track", "camera")
/// ```
public struct Element: PipelineComponent, Hashable, CustomStringConvertible {
    /// The factory (`videotestsrc`, `moqsink`).
    public var factory: String
    /// The element's name, written `name=…` right after the factory; references use it.
    public var name: String?
    /// The properties, in the order they were first set.
    public private(set) var properties: [NamedValue]

    /// An element made by `factory`, optionally named, with properties in their written order.
    public init(
        _ factory: String, name: String? = nil, _ properties: KeyValuePairs<String, any PipelineValueConvertible> = [:]
    ) {
        self.factory = factory
        self.name = name
        self.properties = Array(properties)
    }

    /// A copy with `property` set to `value` (a property set twice keeps its first position).
    public func set(_ property: String, _ value: some PipelineValueConvertible) -> Element {
        var copy = self
        copy.properties.set(property, value.pipelineValue)
        return copy
    }

    /// A copy with `property` set to `value` (`.set("pattern", .nick("smpte"))`).
    public func set(_ property: String, _ value: PipelineValue) -> Element {
        var copy = self
        copy.properties.set(property, value)
        return copy
    }

    /// A copy with `property` set to `value` when it is not nil (unchanged otherwise).
    public func set(_ property: String, ifPresent value: (some PipelineValueConvertible)?) -> Element {
        guard let value else { return self }
        return set(property, value)
    }

    /// The value set for `property`, if any.
    public subscript(property: String) -> PipelineValue? { properties[named: property] }

    /// The nodes: this element.
    public var nodes: [PipelineNode] { [.element(self)] }

    /// `factory name=… property=value …`.
    public var description: String {
        var out = factory
        if let name { out += " name=\(ValueRendering.propertyString(name))" }
        for p in properties { out += " \(p.name)=\(ValueRendering.property(p.value))" }
        return out
    }
}

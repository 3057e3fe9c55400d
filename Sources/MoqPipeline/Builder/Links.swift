// SPDX-License-Identifier: MIT

/// A named element and optionally one of its pads, written `name.pad` (or `name.` for any pad).
public struct PadReference: Sendable, Hashable, CustomStringConvertible {
    /// The element's name.
    public var element: String
    /// The pad's name (a request pad such as `sink_1`, a sometimes pad such as `src_0`); nil for any.
    public var pad: String?

    /// A reference to `element`'s `pad`.
    public init(element: String, pad: String? = nil) {
        self.element = element
        self.pad = pad
    }

    /// `element.pad`.
    public var description: String { "\(element).\(pad ?? "")" }
}

/// Ends a chain at a named element's pad: `Link(to: "moq", pad: "sink_1")` is `! moq.sink_1`.
public struct Link: PipelineComponent {
    /// The target.
    public var target: PadReference

    /// A link to `element`'s `pad` (any compatible pad when nil).
    public init(to element: String, pad: String? = nil) {
        target = PadReference(element: element, pad: pad)
    }

    /// The nodes: a reference.
    public var nodes: [PipelineNode] { [.reference(target)] }
}

/// Starts a chain at a named element's pad: `From("mic")` is `mic. ! …`.
public struct From: PipelineComponent {
    /// The source.
    public var source: PadReference

    /// A chain starting from `element`'s `pad` (the next free one when nil).
    public init(_ element: String, pad: String? = nil) {
        source = PadReference(element: element, pad: pad)
    }

    /// The nodes: a reference.
    public var nodes: [PipelineNode] { [.reference(source)] }
}

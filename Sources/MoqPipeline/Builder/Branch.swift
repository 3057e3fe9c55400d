// SPDX-License-Identifier: MIT

/// A separate chain, written after the chain it appears in: a second input of a muxer or sink, or (inside
/// a ``Tee``) one of its outputs.
///
/// ```swift
/// Branch { Element("audiotestsrc").set("is-live", true); Element("opusenc"); Link(to: "moq", pad: "sink_1") }
/// ```
public struct Branch: PipelineComponent {
    /// The chain's nodes.
    public var content: [PipelineNode]

    /// A chain built from `content`.
    public init(@PipelineBuilder _ content: () -> [PipelineNode]) {
        self.content = content()
    }

    /// The nodes: one branch.
    public var nodes: [PipelineNode] { [.branch(content)] }
}

/// A reusable piece of a chain: its nodes are spliced in where it appears.
public struct Fragment: PipelineComponent {
    /// The nodes.
    public var nodes: [PipelineNode]

    /// A fragment built from `content`.
    public init(@PipelineBuilder _ content: () -> [PipelineNode]) {
        nodes = content()
    }
}

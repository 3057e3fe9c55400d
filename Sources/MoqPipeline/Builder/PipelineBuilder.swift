// SPDX-License-Identifier: MIT

/// One step of a pipeline graph, in the order gst-launch-1.0 reads it.
public enum PipelineNode: Sendable, Hashable {
    /// An element in the current chain.
    case element(Element)
    /// A caps filter between the previous and the next element of the chain.
    case caps(Caps)
    /// A named element (and pad): the start of a chain (`mic. ! queue`) or its end (`! moq.sink_1`).
    case reference(PadReference)
    /// A separate chain, written after the current one (a branch of a `tee`, a second input of a muxer).
    case branch([PipelineNode])
}

/// Anything that contributes nodes to a pipeline: ``Element``, ``Caps``, ``Link``, ``From``, ``Queue``,
/// ``Tee``, ``Branch`` and ``Fragment``.
///
/// To package a reusable piece of a chain, return a ``Fragment``:
///
/// ```swift
/// func h264(keyframeEvery frames: Int) -> Fragment {
///     Fragment {
///         Element("x264enc").set("tune", "zerolatency").set("key-int-max", frames)
///         Element("h264parse")
///     }
/// }
/// ```
public protocol PipelineComponent: Sendable {
    /// The nodes this component adds, in order.
    var nodes: [PipelineNode] { get }
}

extension PipelineNode: PipelineComponent {
    /// The node itself.
    public var nodes: [PipelineNode] { [self] }
}

/// The result builder behind ``Pipeline/init(_:)``, ``Branch``, ``Fragment`` and ``Tee``: components are
/// chained in order (`!`); `if`, `if`/`else`, `switch` and `for` work as in any Swift block.
@resultBuilder
public enum PipelineBuilder {
    /// A component's nodes.
    public static func buildExpression(_ component: some PipelineComponent) -> [PipelineNode] { component.nodes }

    /// Nodes built elsewhere.
    public static func buildExpression(_ nodes: [PipelineNode]) -> [PipelineNode] { nodes }

    /// The statements of a block, chained in order.
    public static func buildBlock(_ parts: [PipelineNode]...) -> [PipelineNode] { parts.flatMap { $0 } }

    /// An `if` without `else`.
    public static func buildOptional(_ part: [PipelineNode]?) -> [PipelineNode] { part ?? [] }

    /// The first branch of an `if`/`else` or `switch`.
    public static func buildEither(first part: [PipelineNode]) -> [PipelineNode] { part }

    /// The second branch of an `if`/`else` or `switch`.
    public static func buildEither(second part: [PipelineNode]) -> [PipelineNode] { part }

    /// A `for` loop.
    public static func buildArray(_ parts: [[PipelineNode]]) -> [PipelineNode] { parts.flatMap { $0 } }

    /// An `if #available` block.
    public static func buildLimitedAvailability(_ part: [PipelineNode]) -> [PipelineNode] { part }
}

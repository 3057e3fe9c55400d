// SPDX-License-Identifier: MIT

/// A `tee` and its outputs: each ``Branch`` inside becomes a chain starting at `name.` (unless it starts
/// with a ``From`` of its own, such as `From("t", pad: "src_1")`).
///
/// ```swift
/// Tee(name: "mic") {
///     Branch { Queue(); Element("opusenc"); Link(to: "moq", pad: "sink_1") }
///     Branch { Queue(); Element("wavescope"); … }
/// }
/// // … ! tee name=mic mic. ! queue ! opusenc ! moq.sink_1 mic. ! queue ! wavescope …
/// ```
///
/// Each output of a tee needs its own queue (or another thread boundary) so that one branch cannot
/// stall the others; pass `queueEachBranch: true` to add one at the start of every branch.
/// Components inside the block that are not branches form one more branch, in place.
public struct Tee: PipelineComponent {
    /// The `tee` element.
    public var element: Element
    /// The outputs.
    public var branches: [[PipelineNode]]

    /// A tee named `name` with `branches`.
    public init(
        name: String, queueEachBranch: Bool = false,
        _ properties: KeyValuePairs<String, any PipelineValueConvertible> = [:],
        @PipelineBuilder branches: () -> [PipelineNode]
    ) {
        element = Element("tee", name: name, properties)
        var outputs: [[PipelineNode]] = []
        var loose: [PipelineNode] = []
        for node in branches() {
            if case .branch(let chain) = node {
                if !loose.isEmpty { outputs.append(loose) }
                loose = []
                outputs.append(chain)
            } else {
                loose.append(node)
            }
        }
        if !loose.isEmpty { outputs.append(loose) }
        self.branches = outputs.map { chain in
            var chain = chain
            if case .reference = chain.first {
            } else {
                if queueEachBranch { chain.insert(.element(Element("queue")), at: 0) }
                chain.insert(.reference(PadReference(element: name)), at: 0)
            }
            return chain
        }
    }

    /// The nodes: the `tee` in the current chain, then one branch per output.
    public var nodes: [PipelineNode] { [.element(element)] + branches.map { .branch($0) } }
}

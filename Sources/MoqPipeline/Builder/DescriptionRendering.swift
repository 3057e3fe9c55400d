// SPDX-License-Identifier: MIT

/// Writes nodes as gst-launch-1.0 chains: the nodes of a chain joined by ` ! `, and each branch as a chain
/// of its own after the chain it appears in (depth first, in order).
enum DescriptionRendering {
    static func chains(_ nodes: [PipelineNode]) -> [String] {
        var current: [String] = []
        var deferred: [[PipelineNode]] = []
        for node in nodes {
            switch node {
            case .element(let e): current.append(e.description)
            case .caps(let c): current.append(c.description)
            case .reference(let r): current.append(r.description)
            case .branch(let b): deferred.append(b)
            }
        }
        var out = current.isEmpty ? [] : [current.joined(separator: " ! ")]
        for branch in deferred { out += chains(branch) }
        return out
    }
}

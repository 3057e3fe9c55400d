// SPDX-License-Identifier: MIT

/// A `queue`, with its common limits as typed arguments.
///
/// ```swift
/// Queue()                                                        // queue
/// Queue(maxSizeBuffers: 1, leaky: .downstream)                   // queue max-size-buffers=1 leaky=downstream
/// Queue(maxSizeTime: .milliseconds(200)).set("silent", true)
/// ```
public struct Queue: PipelineComponent {
    /// What a full queue drops.
    public enum Leaky: String, PipelineEnum, Sendable {
        /// Nothing: upstream blocks (the default).
        case no
        /// New buffers.
        case upstream
        /// The oldest buffers.
        case downstream
    }

    /// The `queue` element.
    public var element: Element

    /// A queue; nil limits keep the element's defaults (200 buffers, 10 MB, 1 s).
    public init(
        name: String? = nil, maxSizeBuffers: Int? = nil, maxSizeBytes: Int? = nil, maxSizeTime: Duration? = nil,
        leaky: Leaky? = nil
    ) {
        element = Element("queue", name: name)
            .set("max-size-buffers", ifPresent: maxSizeBuffers)
            .set("max-size-bytes", ifPresent: maxSizeBytes)
            .set("max-size-time", ifPresent: maxSizeTime)
            .set("leaky", ifPresent: leaky)
    }

    /// A copy with another property set.
    public func set(_ property: String, _ value: some PipelineValueConvertible) -> Queue {
        var copy = self
        copy.element = element.set(property, value)
        return copy
    }

    /// A copy with another property set.
    public func set(_ property: String, _ value: PipelineValue) -> Queue {
        var copy = self
        copy.element = element.set(property, value)
        return copy
    }

    /// The nodes: the queue.
    public var nodes: [PipelineNode] { [.element(element)] }
}

// SPDX-License-Identifier: MIT
import CGStreamer
package import GstSupport
import MoqSync

/// A pipeline: described with the ``PipelineBuilder`` DSL (or given as a gst-launch string), rendered to
/// the exact gst-launch-1.0 description, and run.
///
/// ```swift
/// let p = Pipeline {
///     Element("videotestsrc").set("num-buffers", 10)
///     Caps("video/x-raw", ["width": 320, "height": 240])
///     Element("fakesink")
/// }
/// p.description                 // "videotestsrc num-buffers=10 ! video/x-raw,width=320,height=240 ! fakesink"
/// try p.start()
/// try await p.waitForEOS(timeout: .seconds(5))
/// p.stop()
/// ```
///
/// Bus messages are read on a dedicated thread and kept per run (``collectedMessages``); ``messages``
/// streams them and ``run(until:timeout:)`` waits for one, without occupying the cooperative pool.
public final class Pipeline: Sendable, CustomStringConvertible {
    /// The nodes the builder produced (empty for a pipeline made from a string).
    public let nodes: [PipelineNode]
    /// The chains of the description, in order (one per line in a `.pipeline` file).
    public let chains: [String]
    /// The gst-launch-1.0 description: the chains separated by one space.
    public let description: String

    let hub = MessageHub()
    let current = Lock<Run?>(nil)
    /// Contexts set on the pipeline when it is built, before any state change (``provide(_:)``).
    let contexts = Lock<[OwnedContext]>([])

    /// A parsed, running GStreamer pipeline and its bus thread.
    final class Run: Sendable {
        let element: ObjectRef<GstElement>
        let reader: BusReader
        let name: String

        init(element: ObjectRef<GstElement>, reader: BusReader) {
            self.element = element
            self.reader = reader
            name = element.name
        }
    }

    /// A pipeline built with the DSL.
    public convenience init(@PipelineBuilder _ content: () -> [PipelineNode]) {
        self.init(nodes: content())
    }

    /// A pipeline of these nodes.
    public init(nodes: [PipelineNode]) {
        self.nodes = nodes
        chains = DescriptionRendering.chains(nodes)
        description = chains.joined(separator: " ")
    }

    /// A pipeline from a gst-launch-1.0 description, used as given.
    public init(launch description: String) {
        nodes = []
        chains = [description]
        self.description = description
    }

    deinit { stop() }

    /// Whether ``start(_:)`` made the GStreamer pipeline (and ``stop()`` has not released it).
    public var isRunning: Bool { current.withLock { $0 != nil } }

    /// The messages of the current (or last) run, oldest first (up to 10 000; older ones are dropped).
    public var collectedMessages: [BusMessage] { hub.messages }

    /// The bus messages of the current run from its first one, then live until ``stop()``. Asked before
    /// ``start(_:)``, the stream carries the next run.
    public var messages: AsyncStream<BusMessage> { hub.stream() }

    /// Hands `context` to the pipeline's elements each time it is built, before it leaves NULL (what
    /// GStreamer's `gst_element_set_context` does for a display or a shared connection).
    package func provide(_ context: OwnedContext) {
        contexts.withLock { $0.append(context) }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
public import MoqPipeline

/// Pushes Swift values into an `appsrc` of a running pipeline.
///
/// ```swift
/// let p = Pipeline(launch: "appsrc name=src format=time caps=application/x-test ! appsink name=sink")
/// try p.start()
/// let src = try AppSource(p, name: "src")
/// try src.push([1, 2, 3], pts: .milliseconds(40))
/// try src.endOfStream()
/// ```
public final class AppSource: Sendable {
    private let element: ElementHandle

    /// The `appsrc` named `name`.
    ///
    /// - Throws: ``TestKitError/pipeline(_:)`` when there is none, ``TestKitError/wrongElement(name:expected:found:)``.
    public init(_ pipeline: Pipeline, name: String) throws(TestKitError) {
        do { element = try pipeline.element(named: name) } catch { throw .pipeline(error) }
        let factory = element.factoryName ?? "?"
        guard factory == "appsrc" else { throw .wrongElement(name: name, expected: "appsrc", found: factory) }
    }

    private var appsrc: UnsafeMutablePointer<GstAppSrc> {
        UnsafeMutableRawPointer(element.object.pointer).assumingMemoryBound(to: GstAppSrc.self)
    }

    /// Pushes one buffer.
    ///
    /// - Throws: ``TestKitError/flow(_:)`` when the source refuses it (`flushing` when not playing, `eos`).
    public func push(_ sample: Sample) throws(TestKitError) {
        let flow = gst_app_src_push_buffer(appsrc, BufferConversion.buffer(sample))
        if flow != GST_FLOW_OK { throw .flow(BufferConversion.flowName(flow)) }
    }

    /// Pushes `bytes` with the given times and flags.
    public func push(
        _ bytes: [UInt8], pts: Duration? = nil, dts: Duration? = nil, duration: Duration? = nil,
        flags: BufferFlags = []
    ) throws(TestKitError) {
        try push(Sample(bytes, pts: pts, dts: dts, duration: duration, flags: flags))
    }

    /// Ends the stream (downstream gets EOS once the queued buffers are out).
    public func endOfStream() throws(TestKitError) {
        let flow = gst_app_src_end_of_stream(appsrc)
        if flow != GST_FLOW_OK { throw .flow(BufferConversion.flowName(flow)) }
    }
}

// SPDX-License-Identifier: MIT
package import CGStreamer
import CGstApp
public import MoqPipeline

/// Pulls samples from an `appsink` of a running pipeline as Swift values.
///
/// Pulling polls the sink without blocking (every 2 ms), so waiting never holds a thread of the
/// cooperative pool.
public final class AppSink: Sendable {
    private let element: ElementHandle

    /// The `appsink` named `name`.
    ///
    /// - Throws: ``TestKitError/pipeline(_:)`` when there is none, ``TestKitError/wrongElement(name:expected:found:)``.
    public init(_ pipeline: Pipeline, name: String) throws(TestKitError) {
        do { element = try pipeline.element(named: name) } catch { throw .pipeline(error) }
        let factory = element.factoryName ?? "?"
        guard factory == "appsink" else { throw .wrongElement(name: name, expected: "appsink", found: factory) }
    }

    /// An `appsink` this package's tests made themselves (a sink given to `playbin3`, say); a
    /// reference of its own is taken.
    package init(element: UnsafeMutablePointer<GstElement>) {
        gst_object_ref(UnsafeMutableRawPointer(element))
        self.element = ElementHandle(owning: element)
    }

    var appsink: UnsafeMutablePointer<GstAppSink> {
        UnsafeMutableRawPointer(element.object.pointer).assumingMemoryBound(to: GstAppSink.self)
    }

    /// The next sample if one is waiting, without waiting.
    public func tryPull() -> Sample? {
        guard let sample = gst_app_sink_try_pull_sample(appsink, 0) else { return nil }
        defer { gst_sample_unref(sample) }
        guard let buffer = gst_sample_get_buffer(sample) else { return nil }
        return BufferConversion.sample(buffer, caps: gst_sample_get_caps(sample))
    }

    /// Whether the sink has EOS and nothing left to pull.
    public var isEOS: Bool { gst_app_sink_is_eos(appsink) != 0 }

    /// The next sample, or nil at end of stream.
    ///
    /// - Throws: ``TestKitError/timedOut(_:)`` when nothing arrives in time.
    public func pull(timeout: Duration = .seconds(10)) async throws(TestKitError) -> Sample? {
        let name = element.name
        let sink = self
        return try await poll("a sample from \(name)", timeout: timeout) { () throws(TestKitError) -> Sample?? in
            if let s = sink.tryPull() { return .some(s) }
            return sink.isEOS ? .some(nil) : nil
        }
    }

    /// The next `count` samples (fewer if the stream ends).
    public func pull(count: Int, timeout: Duration = .seconds(10)) async throws(TestKitError) -> [Sample] {
        var out: [Sample] = []
        while out.count < count, let s = try await pull(timeout: timeout) { out.append(s) }
        return out
    }
}

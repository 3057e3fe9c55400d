// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import MoqSync

/// Records every sample an `appsink` receives, from its creation until ``stop()``, keeping what
/// `keep` makes of each: a digest, a count, or the ``Sample`` itself.
///
/// ```swift
/// let video = SampleRecorder(try AppSink(pipeline, name: "v")) { $0.pts }
/// try pipeline.start()
/// try await eventually("30 frames") { video.count >= 30 }
/// ```
///
/// The sink's `new-sample` callback takes each sample on the streaming thread as it arrives:
/// nothing polls and no thread waits, and a sample is counted the moment the sink has it. Create the
/// recorder before the pipeline plays to see every sample. A recorder replaces the sink's signals
/// and any other callbacks, so ``AppSink/pull(timeout:)`` finds nothing on a recorded sink. After
/// ``stop()`` the sink still takes its samples and drops them, so an unread sink never stalls
/// the pipeline.
public final class SampleRecorder<Entry: Sendable>: Sendable {
    private struct State {
        var entries: [Entry] = []
        var stopped = false
    }

    private let state = Lock(State())

    /// Starts recording what `sink` receives.
    /// - Parameter keep: what to keep of a sample; runs on the streaming thread, once per sample,
    ///   in order.
    public init(_ sink: AppSink, keep: @escaping @Sendable (Sample) -> Entry) {
        let state = self.state
        let taker = SampleTaker { sample in
            guard !state.withLock({ $0.stopped }) else { return }
            let entry = keep(sample)
            state.withLock { s in if !s.stopped { s.entries.append(entry) } }
        }
        var callbacks = GstAppSinkCallbacks()
        callbacks.new_sample = { appsink, data in
            guard let appsink, let data, let sample = gst_app_sink_pull_sample(appsink) else { return GST_FLOW_OK }
            defer { gst_sample_unref(sample) }
            if let buffer = gst_sample_get_buffer(sample) {
                let taker = Unmanaged<SampleTaker>.fromOpaque(data).takeUnretainedValue()
                taker.take(BufferConversion.sample(buffer, caps: gst_sample_get_caps(sample)))
            }
            return GST_FLOW_OK
        }
        // The sink owns the taker (and through it `keep` and the entries) until its callbacks are
        // replaced or it is finalized.
        gst_app_sink_set_callbacks(
            sink.appsink, &callbacks, Unmanaged.passRetained(taker).toOpaque(),
            { data in if let data { Unmanaged<SampleTaker>.fromOpaque(data).release() } })
    }

    /// What was kept so far, in arrival order.
    public var entries: [Entry] { state.withLock { $0.entries } }

    /// How many samples were kept so far.
    public var count: Int { state.withLock { $0.entries.count } }

    /// Ends the recording: ``entries`` stays as it is; the sink drops what it receives from now on.
    /// Idempotent, and done on deinit.
    public func stop() { state.withLock { $0.stopped = true } }

    deinit { stop() }
}

extension SampleRecorder where Entry == Sample {
    /// Starts recording every sample `sink` receives, as it is.
    public convenience init(_ sink: AppSink) { self.init(sink, keep: { $0 }) }
}

/// The callback's context: one function, not generic (a C callback cannot name a generic type).
private final class SampleTaker: Sendable {
    let take: @Sendable (Sample) -> Void
    init(_ take: @escaping @Sendable (Sample) -> Void) { self.take = take }
}

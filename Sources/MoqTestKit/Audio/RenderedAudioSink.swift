// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
public import MoqPipeline

/// `moqtestaudiosink`: an audio sink that measures what a sound card would have played.
///
/// It is a real GstAudioSink (a GstAudioBaseSink with its ring buffer, like alsasink; Debian's
/// `fakeaudiosink` is a bin around `fakesink` and renders nothing of the kind), on an emulated
/// device that consumes samples at the sample rate from the first write and holds about 20 ms.
/// GstAudioBaseSink's own logic therefore runs as with a device: its clock, the alignment of
/// each buffer to the previous one, resyncs when timestamps jump, dropping samples that come
/// too late, and the silence it writes when nothing was committed in time. What the device
/// plays (channel 0) goes through a ``ToneTracker`` following a sine of known frequency; see
/// ``ToneTracker/defaultFrequency`` for why 430.9 Hz.
///
/// ```swift
/// RenderedAudioSink.register()
/// let p = Pipeline(launch: "audiotestsrc is-live=true wave=sine freq=\(ToneTracker.defaultFrequency) num-buffers=150 "
///     + "samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=1 ! opusenc ! opusdec ! audioconvert "
///     + "! moqtestaudiosink name=out")
/// try p.start()
/// try await p.waitForEOS()
/// let report = try await p.renderedAudioAfterTone(named: "out")
/// #expect(report.tone.discontinuities == 0 && report.resyncs == 0)
/// ```
///
/// Properties: `frequency` (double, the sine to follow; set it in NULL or READY) and `stats`
/// (read-only structure `application/x-moqtestaudiosink-stats`: rendered-samples, tone-ms,
/// tone-start-ms, silence-gaps, silence-ms, longest-silence-ms, discontinuities,
/// first-discontinuities, resyncs, warnings, first-warnings, underruns, underrun-ms, amplitude, rate, channels,
/// format, frequency-hz). The counts start again when the element opens (NULL → READY); the
/// tone's at each caps negotiation.
///
/// The element is registered in this process only: a description ending in `! moqtestaudiosink`
/// parses (`Pipeline(launch:)`, `gst_parse_launch`) in a program or test that links MoqTestKit and
/// called ``register()`` first, not in the `gst-launch-1.0` tool, which loads installed plugins.
public enum RenderedAudioSink {
    /// The factory name pipelines use.
    public static let factoryName = "moqtestaudiosink"

    private static let registered: Void = {
        GstInitialization.ensure()
        _ = gst_element_register(nil, factoryName, guint(GST_RANK_NONE.rawValue), RenderedAudioSinkType.type)
    }()

    /// Initialises GStreamer if needed and registers `moqtestaudiosink`, once per process
    /// (later calls return at once, from any thread).
    public static func register() { _ = registered }

    /// What the `moqtestaudiosink` `element` rendered until now; nil when it is another element.
    public static func report(of element: ElementHandle) -> RenderedAudioReport? {
        let instance = UnsafeMutableRawPointer(element.object.pointer)
        guard
            g_type_check_instance_is_a(instance.assumingMemoryBound(to: GTypeInstance.self), RenderedAudioSinkType.type)
                != 0
        else { return nil }
        return RenderedAudioSinkType.device(instance).report
    }
}

extension Pipeline {
    /// What the `moqtestaudiosink` named `name` rendered until now.
    ///
    /// - Throws: ``TestKitError/pipeline(_:)`` when the pipeline is not running or has no such
    ///   element, ``TestKitError/wrongElement(name:expected:found:)`` when it is another element.
    public func renderedAudio(named name: String) throws(TestKitError) -> RenderedAudioReport {
        let element: ElementHandle
        do { element = try self.element(named: name) } catch { throw .pipeline(error) }
        guard let report = RenderedAudioSink.report(of: element) else {
            throw .wrongElement(
                name: name, expected: RenderedAudioSink.factoryName, found: element.factoryName ?? "element")
        }
        return report
    }

    /// What the `moqtestaudiosink` named `name` rendered once the tone is over: waits (sleeping)
    /// until the device has played 50 ms past the tone's last sample, or `timeout`, then reports.
    ///
    /// Call it after end of stream: GstAudioBaseSink posts EOS when the pipeline's clock reaches
    /// the last sample, and its device (slaved to that clock) may still hold a few ms of it.
    ///
    /// - Throws: what ``renderedAudio(named:)`` throws.
    public func renderedAudioAfterTone(named name: String, timeout: Duration = .seconds(2)) async throws(TestKitError)
        -> RenderedAudioReport
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            let report = try renderedAudio(named: name)
            let tone = report.tone
            let end = (tone.toneStartSample ?? 0) + tone.toneSamples
            if tone.renderedSamples >= end + Int64(tone.sampleRate / 20) || ContinuousClock.now >= deadline {
                return report
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import CGstCheck
public import MoqPipeline

/// GStreamer's `GstHarness` with Swift values: one element (or a gst-launch fragment) between a source
/// pad the test pushes into and a sink pad it pulls from.
///
/// ```swift
/// let h = try Harness(element: "identity")
/// h.setSourceCaps("application/x-test")
/// try h.push([1, 2, 3], pts: .zero)
/// let out = try await h.pull()          // Sample(bytes: [1, 2, 3], pts: 0 s, caps: "application/x-test")
/// h.pushEvent(.eos)
/// ```
///
/// Not `Sendable`: a harness, like GstHarness, belongs to the test that made it.
public final class Harness {
    private let harness: UnsafeMutablePointer<GstHarness>

    /// A harness around a new element of `factory`, linked at its `sinkPad` and `srcPad` (nil for an
    /// element without one: a source has no sink pad).
    ///
    /// - Throws: ``TestKitError/harness(_:)`` when the factory or a pad does not exist (GstHarness itself
    ///   would abort the process).
    public init(element factory: String, sinkPad: String? = "sink", srcPad: String? = "src") throws(TestKitError) {
        GStreamer.initialize()
        guard let probe = gst_element_factory_make(factory, nil) else { throw .harness("no element \"\(factory)\"") }
        gst_object_ref_sink(UnsafeMutableRawPointer(probe))
        defer { gst_object_unref(UnsafeMutableRawPointer(probe)) }
        for pad in [sinkPad, srcPad].compactMap({ $0 }) where !Self.has(probe, pad: pad) {
            throw .harness("\(factory) has no pad or pad template \"\(pad)\"")
        }
        harness = gst_harness_new_with_padnames(factory, sinkPad, srcPad)
    }

    /// A harness around a bin parsed from a gst-launch fragment (`"h264parse ! identity"`); its unlinked
    /// pads are the harness's.
    ///
    /// - Throws: ``TestKitError/harness(_:)`` with the parser's message.
    public init(parse launchline: String) throws(TestKitError) {
        GStreamer.initialize()
        var error: UnsafeMutablePointer<GError>?
        let bin = gst_parse_bin_from_description_full(launchline, 1, nil, GST_PARSE_FLAG_NO_SINGLE_ELEMENT_BINS, &error)
        if let error {
            let message = error.pointee.message.map { String(cString: $0) } ?? "cannot parse"
            g_error_free(error)
            if let bin { gst_object_unref(UnsafeMutableRawPointer(bin)) }
            throw .harness(message)
        }
        if let bin { gst_object_unref(UnsafeMutableRawPointer(bin)) }
        harness = gst_harness_new_parse(launchline)
    }

    deinit { gst_harness_teardown(harness) }

    /// The element under test (a bin for ``init(parse:)``), for its properties.
    public var element: ElementHandle {
        let e = harness.pointee.element!
        gst_object_ref(UnsafeMutableRawPointer(e))
        return ElementHandle(owning: e)
    }

    private static func has(_ element: UnsafeMutablePointer<GstElement>, pad: String) -> Bool {
        if let p = gst_element_get_static_pad(element, pad) {
            gst_object_unref(UnsafeMutableRawPointer(p))
            return true
        }
        let instance = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GTypeInstance.self)
        let cls = UnsafeMutableRawPointer(instance.pointee.g_class).assumingMemoryBound(to: GstElementClass.self)
        return gst_element_class_get_pad_template(cls, pad) != nil
    }

    // MARK: Set-up

    /// Sets the caps pushed buffers carry (sends stream-start, caps and segment events).
    public func setSourceCaps(_ caps: String) { gst_harness_set_src_caps_str(harness, caps) }

    /// Sets the caps the harness's sink pad accepts.
    public func setSinkCaps(_ caps: String) { gst_harness_set_sink_caps_str(harness, caps) }

    /// Sets the element to PLAYING (done already for elements with a sink pad).
    public func play() { gst_harness_play(harness) }

    /// Replaces the clock with a test clock that only moves when told (``setTime(_:)``,
    /// ``crankClock(timeout:)``).
    public func useTestClock() { gst_harness_use_testclock(harness) }

    /// Waits until the element waits on the test clock, then advances the clock to that wait's time and
    /// releases it (`gst_harness_crank_single_clock_wait`, without blocking a thread while nothing waits).
    ///
    /// - Throws: ``TestKitError/harness(_:)`` without a test clock, ``TestKitError/timedOut(_:)``.
    public func crankClock(timeout: Duration = .seconds(10)) async throws(TestKitError) {
        guard let clock = gst_harness_get_testclock(harness) else {
            throw .harness("no test clock: useTestClock() first")
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        try await poll("the element to wait on the test clock", timeout: timeout) {
            gst_test_clock_peek_id_count(clock) > 0 ? () : nil
        }
        guard gst_harness_crank_single_clock_wait(harness) != 0 else {
            throw .harness("the clock wait could not be released")
        }
    }

    /// Sets the test clock's time.
    @discardableResult
    public func setTime(_ time: Duration) -> Bool {
        gst_harness_set_time(harness, BufferConversion.clockTime(time)) != 0
    }

    // MARK: Buffers

    /// Pushes a buffer into the element.
    ///
    /// - Throws: ``TestKitError/flow(_:)`` when the element does not return OK.
    public func push(_ sample: Sample) throws(TestKitError) {
        let flow = gst_harness_push(harness, BufferConversion.buffer(sample))
        if flow != GST_FLOW_OK { throw .flow(BufferConversion.flowName(flow)) }
    }

    /// Pushes `bytes` with the given times and flags.
    public func push(
        _ bytes: [UInt8], pts: Duration? = nil, dts: Duration? = nil, duration: Duration? = nil,
        flags: BufferFlags = []
    ) throws(TestKitError) {
        try push(Sample(bytes, pts: pts, dts: dts, duration: duration, flags: flags))
    }

    /// The next buffer the element pushed, if any, with the caps on the harness's sink pad.
    public func tryPull() -> Sample? {
        guard let buffer = gst_harness_try_pull(harness) else { return nil }
        defer { gst_buffer_unref(buffer) }
        let caps = gst_pad_get_current_caps(harness.pointee.sinkpad)
        defer { if let caps { gst_caps_unref(caps) } }
        return BufferConversion.sample(buffer, caps: caps)
    }

    /// The next buffer the element pushes.
    ///
    /// - Throws: ``TestKitError/timedOut(_:)``.
    public func pull(timeout: Duration = .seconds(10)) async throws(TestKitError) -> Sample {
        try await poll("a buffer from the harness", timeout: timeout) { tryPull() }
    }

    /// Buffers waiting to be pulled.
    public var buffersInQueue: Int { Int(gst_harness_buffers_in_queue(harness)) }

    // MARK: Events

    /// Sends an event into the element; false if it was not handled.
    @discardableResult
    public func pushEvent(_ event: HarnessEvent) -> Bool { gst_harness_push_event(harness, event.make()) != 0 }

    /// The next event the element sent downstream, if any.
    public func tryPullEvent() -> ReceivedEvent? { gst_harness_try_pull_event(harness).map(ReceivedEvent.init) }

    /// The next event the element sent upstream, if any.
    public func tryPullUpstreamEvent() -> ReceivedEvent? {
        gst_harness_try_pull_upstream_event(harness).map(ReceivedEvent.init)
    }

    /// Downstream events received so far (pulled or not).
    public var eventsReceived: Int { Int(gst_harness_events_received(harness)) }

    /// Downstream events waiting to be pulled.
    public var eventsInQueue: Int { Int(gst_harness_events_in_queue(harness)) }
}

// SPDX-License-Identifier: MIT
package import CGStreamer
package import GstSupport

extension Pipeline {
    /// Builds the GStreamer pipeline (`gst_parse_launch_full` with fatal errors) and sets it to `state`.
    /// When already running, only changes the state.
    ///
    /// - Throws: ``PipelineError/parse(_:)`` with the parser's message, or
    ///   ``PipelineError/stateChange(_:)`` with the ERROR the pipeline posted (the pipeline is then
    ///   released, and its messages stay in ``collectedMessages``).
    @discardableResult
    public func start(_ state: PipelineState = .playing) throws(PipelineError) -> StateChange {
        GStreamer.initialize()
        if isRunning { return try setState(state) }
        let element = try Self.parse(description)
        for context in contexts.withLock({ $0 }) { gst_element_set_context(element.pointer, context.pointer) }
        hub.begin()
        let reader: BusReader
        do { reader = try BusReader(pipeline: element, hub: hub) } catch {
            gst_element_set_state(element.pointer, GST_STATE_NULL)
            hub.end()
            throw error
        }
        let run = Run(element: element, reader: reader)
        let raced = current.withLock { slot -> Bool in
            guard slot == nil else { return true }
            slot = run
            return false
        }
        if raced {
            // Another thread started first: drop ours, use theirs.
            gst_element_set_state(element.pointer, GST_STATE_NULL)
            reader.stop()
            return try setState(state)
        }
        return try setState(state)
    }

    /// Sets the pipeline to NULL, delivers its last messages, ends ``messages`` streams and pending waits,
    /// and releases it. Does nothing when not running.
    public func stop() {
        guard
            let run = current.withLock({ r -> Run? in
                defer { r = nil }
                return r
            })
        else { return }
        gst_element_set_state(run.element.pointer, GST_STATE_NULL)
        run.reader.stop()
        hub.end()
    }

    /// Changes the state; an asynchronous change completes later (``waitForState(_:timeout:)``).
    ///
    /// - Throws: ``PipelineError/notRunning``, or ``PipelineError/stateChange(_:)`` with the ERROR the
    ///   pipeline posted. A failed change to PAUSED or PLAYING stops the pipeline.
    @discardableResult
    public func setState(_ state: PipelineState) throws(PipelineError) -> StateChange {
        guard let run = current.withLock({ $0 }) else { throw .notRunning }
        switch gst_element_set_state(run.element.pointer, state.gst) {
        case GST_STATE_CHANGE_SUCCESS: return .success
        case GST_STATE_CHANGE_ASYNC: return .async
        case GST_STATE_CHANGE_NO_PREROLL: return .noPreroll
        default:
            // Stopping joins the bus thread, so the ERROR posted during the change is collected.
            stop()
            let error = hub.messages.first(where: \.isError)
            throw .stateChange(error?.description ?? "\(run.name) could not change to \(state)")
        }
    }

    /// The pipeline's current state (``PipelineState/null`` when not running).
    public var state: PipelineState {
        guard let run = current.withLock({ $0 }) else { return .null }
        var state = GST_STATE_VOID_PENDING
        gst_element_get_state(run.element.pointer, &state, nil, 0)
        return PipelineState(state)
    }

    /// Waits until the pipeline itself reaches `state`.
    ///
    /// - Throws: ``PipelineError/timedOut(_:)``, ``PipelineError/failed(_:)`` on an ERROR,
    ///   ``PipelineError/notRunning``.
    public func waitForState(_ state: PipelineState, timeout: Duration = .seconds(10)) async throws(PipelineError) {
        guard let run = current.withLock({ $0 }) else { throw .notRunning }
        let after = hub.lastSequence
        if self.state == state { return }
        let name = run.name
        _ = try await hub.wait(for: "\(name) to reach \(state)", after: after, timeout: timeout) { m in
            if case .stateChanged(name, _, state) = m { return true }
            return false
        }
    }

    /// The pipeline's running time (clock time minus base time), while it has a clock.
    public var runningTime: Duration? {
        guard let run = current.withLock({ $0 }) else { return nil }
        let t = gst_element_get_current_running_time(run.element.pointer)
        guard swiftmoq_clock_time_is_valid(t) != 0 else { return nil }
        return .nanoseconds(Int64(t))
    }

    /// The element named `name`.
    ///
    /// - Throws: ``PipelineError/notRunning`` or ``PipelineError/noSuchElement(_:)``.
    public func element(named name: String) throws(PipelineError) -> ElementHandle {
        guard let run = current.withLock({ $0 }) else { throw .notRunning }
        let bin = UnsafeMutableRawPointer(run.element.pointer).assumingMemoryBound(to: GstBin.self)
        guard let element = gst_bin_get_by_name(bin, name) else { throw .noSuchElement(name) }
        return ElementHandle(owning: element)
    }

    /// Sends end-of-stream into the pipeline (its sources stop; ``waitForEOS(timeout:)`` then returns once
    /// every sink has it), as `gst-launch-1.0 -e` does on Ctrl-C.
    public func sendEOS() throws(PipelineError) {
        guard let run = current.withLock({ $0 }) else { throw .notRunning }
        if gst_element_send_event(run.element.pointer, gst_event_new_eos()) == 0 {
            throw .eventRefused("EOS was not handled by \(run.name)")
        }
    }

    /// The GStreamer pipeline while running, for code in this package that needs the C object.
    package var gstPipeline: ObjectRef<GstElement>? { current.withLock { $0?.element } }

    /// Parses a description into a pipeline (one owned, sunk reference). A single element is put in a
    /// pipeline so that it has a bus; the bus is not flushed on NULL so that the last messages are read.
    private static func parse(_ description: String) throws(PipelineError) -> ObjectRef<GstElement> {
        var error: UnsafeMutablePointer<GError>?
        let parsed = gst_parse_launch_full(description, nil, GST_PARSE_FLAG_FATAL_ERRORS, &error)
        if let error {
            let message = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
            g_error_free(error)
            if let parsed { gst_object_unref(UnsafeMutableRawPointer(parsed)) }
            throw .parse(message)
        }
        guard let parsed else { throw .parse("the parser returned nothing") }
        gst_object_ref_sink(UnsafeMutableRawPointer(parsed))
        var top = parsed
        if swiftmoq_is_pipeline(UnsafeMutableRawPointer(parsed)) == 0 {
            let pipeline = gst_pipeline_new(nil)!
            gst_object_ref_sink(UnsafeMutableRawPointer(pipeline))
            gst_bin_add(UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self), parsed)
            gst_object_unref(UnsafeMutableRawPointer(parsed))
            top = pipeline
        }
        gst_pipeline_set_auto_flush_bus(UnsafeMutableRawPointer(top).assumingMemoryBound(to: GstPipeline.self), 0)
        return ObjectRef(owning: top)
    }
}

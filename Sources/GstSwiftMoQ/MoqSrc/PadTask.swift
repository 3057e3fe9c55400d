// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback
import MoqSync
import Synchronization

/// What every `moqsrc` pad shares: a GStreamer task (the pad's streaming thread) that reads a
/// track and pushes, a wake-up for it, the end of stream, and what downstream's flow returns mean.
///
/// Subclasses implement ``step(_:)`` (one bounded iteration) and ``stopped()``. The network never
/// runs here: a step blocks on the track's cache (with a timeout) and downstream, never the reverse.
class PadTask: @unchecked Sendable {
    let pad: UnsafeMutablePointer<GstPad>
    let name: String
    private(set) weak var src: MoqSrc?
    let wake = ConditionSignal()
    /// The reader the task blocks on (another thread interrupts or cancels it).
    let readerRef = Lock<TrackReader?>(nil)
    private let stopping = Atomic(false)
    private let eosRequested = Atomic(false)
    /// EOS was pushed on this pad (streaming thread).
    var eosSent = false
    /// The last flow return of a push, for the element's combined flow.
    let lastFlow = Atomic<Int32>(GST_FLOW_OK.rawValue)

    init(pad: UnsafeMutablePointer<GstPad>, name: String, src: MoqSrc) {
        self.pad = pad
        self.name = name
        self.src = src
    }

    /// One iteration: at most one buffer, or a bounded wait. `generation` is the wake-up's, read
    /// before looking for work.
    func step(_ src: MoqSrc, generation: UInt64) {}

    /// The task stopped: end subscriptions and forget the streaming thread's state.
    func stopped() {}

    /// Starts the streaming thread.
    final func start() {
        stopping.store(false, ordering: .releasing)
        let box = Unmanaged.passRetained(self).toOpaque()
        gst_pad_start_task(
            pad, { data in Unmanaged<PadTask>.fromOpaque(data!).takeUnretainedValue().iterate() }, box,
            { data in Unmanaged<PadTask>.fromOpaque(data!).release() })
    }

    /// Stops the streaming thread (waits for the iteration in progress), then ``stopped()``.
    final func stop() {
        stopping.store(true, ordering: .releasing)
        readerRef.withLock { $0?.cancel() }
        wake.signal()
        gst_pad_stop_task(pad)
        stopped()
        readerRef.withLock { $0 = nil }
    }

    /// Wakes the task, and a read it is blocked in.
    final func interrupt() {
        wake.signal()
        readerRef.withLock { $0?.interrupt() }
    }

    /// Ends the stream from the pad's thread (an EOS event sent to the element, or the flows of
    /// every pad said so).
    final func requestEOS() {
        eosRequested.store(true, ordering: .releasing)
        interrupt()
        // A task that paused on a flow return does not iterate again: start it for the EOS.
        if !stopping.load(ordering: .acquiring), gst_pad_get_task_state(pad) == GST_TASK_PAUSED {
            start()
        }
    }

    private final func iterate() {
        guard !stopping.load(ordering: .acquiring), let src else {
            gst_pad_pause_task(pad)
            return
        }
        let generation = wake.current
        if eosRequested.exchange(false, ordering: .acquiring) {
            sendEOS()
            return
        }
        if eosSent {
            gst_pad_pause_task(pad)
            return
        }
        step(src, generation: generation)
    }

    /// Pushes EOS (once) and pauses the task.
    final func sendEOS() {
        if !eosSent {
            eosSent = true
            gst_pad_push_event(pad, gst_event_new_eos())
        }
        gst_pad_pause_task(pad)
    }

    /// Pushes `buffer` and acts on the flow return, as GStreamer's sources do: EOS from downstream
    /// (or nothing linked anywhere) ends the stream once every pad of the element says so
    /// (``MoqSrc/combine(_:from:)``); an error ends it with an ERROR.
    final func push(_ buffer: UnsafeMutablePointer<GstBuffer>, src: MoqSrc) {
        let result = gst_pad_push(pad, buffer)
        lastFlow.store(result.rawValue, ordering: .relaxed)
        switch result {
        case GST_FLOW_OK: break
        case GST_FLOW_NOT_LINKED:
            // decodebin may leave a stream unused: the others go on (the element stops only when
            // nothing takes any of its pads).
            src.combine(result, from: self)
        case GST_FLOW_EOS:
            // This branch wants no more (a snapshot, a sink that finished): the pad idles, and
            // the element ends every stream once all its pads said so. Paused first: ending the
            // streams restarts the task to push EOS.
            gst_pad_pause_task(pad)
            src.combine(result, from: self)
        case GST_FLOW_FLUSHING:
            gst_pad_pause_task(pad)
        default:
            let reason = String(cString: gst_flow_get_name(result))
            src.reporter.error(.stream(GST_STREAM_ERROR_FAILED), "\(name): internal data stream error (\(reason))")
            sendEOS()
        }
    }

    /// Whether this pad's last push said downstream takes nothing more (EOS) or nothing at all.
    var lastFlowReturn: GstFlowReturn { GstFlowReturn(rawValue: lastFlow.load(ordering: .relaxed)) }
}

// SPDX-License-Identifier: MIT
import MoqSync
import SwiftMoQ

/// Reads one subscribed track on the thread that fills it: every change of the track drains
/// what is new into a ``FrameRecorder``. The fan-out load generator reads hundreds of sessions
/// in one process; an async reader per session would hop onto Swift's cooperative pool for every
/// frame, and on two cores the load generator's scheduling, not the relay, would set the
/// latencies measured (issue #24: it took a whole core at 400 subscribers). A frame is timed when
/// its session's network thread completes it, as a GStreamer source's observer sees it.
///
/// Thread-safe: ``trackDidChange()`` runs on the session's event loop, ``drain()`` also on the
/// caller's ticker (a missing group is given up once its wait passes, which needs no change).
final class DirectTrackReader: TrackObserver, @unchecked Sendable {
    private struct State {
        var group: GroupConsumer?
        var recorder: FrameRecorder
        var finished = false
        var error: TrackReadError?
        var cancelled = false
        /// The observer's token, once registered.
        var token: UInt64?
    }

    private let consumer: TrackConsumer
    private let limit: UInt64
    private let state: Lock<State>
    private let onFinish: @Sendable (FrameRecorder, TrackReadError?) -> Void

    /// Reads `consumer` from ``start()`` on. `limit` (> 0) stops after that many frames;
    /// `onFinish` runs once, on whichever thread saw the end, the limit or the cancellation.
    init(
        _ consumer: TrackConsumer, warmupFrames: UInt64, limit: UInt64,
        onFinish: @escaping @Sendable (FrameRecorder, TrackReadError?) -> Void
    ) {
        self.consumer = consumer
        self.limit = limit
        self.onFinish = onFinish
        state = Lock(State(recorder: FrameRecorder(warmupFrames: warmupFrames)))
    }

    /// Registers for the track's changes and reads what is there already.
    func start() {
        let token = consumer.track.addObserver(self)
        let finishedAlready = state.withLock { s in
            s.token = token
            return s.finished
        }
        if finishedAlready { consumer.track.removeObserver(token) }
        drain()
    }

    /// Stops reading (the deadline): the recorder so far is reported.
    func cancel() {
        state.withLock { $0.cancelled = true }
        consumer.cancel()
        drain()
    }

    func trackDidChange() { drain() }

    /// Reads every frame available now.
    func drain() {
        let finished = state.withLock { s -> (FrameRecorder, TrackReadError?, UInt64?)? in
            guard !s.finished else { return nil }
            let now = Monotonic.now()
            reading: while true {
                if let group = s.group {
                    switch group.poll() {
                    case .frame(let frame):
                        s.recorder.record(frame.payload, at: now)
                        if limit > 0 && s.recorder.frames >= limit { break reading }
                    case .ended(let status):
                        if case .aborted = status { s.recorder.groupFailed() }
                        s.group = nil
                    case .wait:
                        // A cancelled reader stops in the middle of a group too.
                        if s.cancelled { break reading }
                        return nil
                    }
                    continue
                }
                switch consumer.poll() {
                case .group(let group):
                    s.recorder.groupStarted()
                    s.group = group
                case .wait: return nil
                case .ended: break reading
                case .failed(let e):
                    s.error = e == .cancelled ? nil : e
                    break reading
                }
            }
            s.finished = true
            s.group = nil
            return (s.recorder, s.error, s.token)
        }
        guard let (recorder, error, token) = finished else { return }
        if let token { consumer.track.removeObserver(token) }
        onFinish(recorder, error)
    }
}

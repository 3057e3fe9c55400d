// SPDX-License-Identifier: MIT
import MoqSync
import MoqWire

/// A Probe stream the peer opened to receive our bandwidth reports: we send
/// `PROBE{bitrate, rtt}` when a value moves by 25 % or more (and at least 16 kbit/s or 2 ms), or
/// every 10 s (polled every 100 ms). The opener must not write; any byte is malformed.
final class ServedProbe: StreamHandler {
    let session: HandlerContext
    let stream: Int64
    private var timer: (any Cancellable)?
    private var last: Probe?
    private var lastSentAt: UInt64 = 0
    /// Counted against ``SessionLimits/maxServedProbes`` until stopped.
    private var served = ServedRequest(.probe)
    private var done: Bool { served.isDone }

    static let pollInterval = Duration.milliseconds(100)
    static let refreshNanos: UInt64 = 10_000_000_000

    init(session: HandlerContext, stream: Int64, buffer: StreamBuffer) {
        self.session = session
        self.stream = stream
        guard session.config.serveProbe else {
            session.abortStream(stream, .cancel)
            served.release(session)
            return
        }
        if buffer.buffered > 0 {
            session.abortStream(stream, .malformedTrack)
            served.release(session)
            return
        }
        // Each probe stream polls the transport ten times a second: a peer gets a few.
        guard served.admit(session) else {
            session.abortStream(stream, .internal)
            served.release(session)
            return
        }
        session.setSendOrder(stream, SendOrder.control)
        tick()
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        if !data.isEmpty {
            session.counters.malformedStreams += 1
            stop(.malformedTrack)
        } else if fin {
            stop(nil)
        }
    }

    func peerReset(wireCode: UInt64) { stop(nil) }
    func peerStopSending(wireCode: UInt64) { stop(.cancel) }

    private func tick() {
        guard !done, session.isReady else { return }
        let estimates = session.transportEstimates
        let report = Probe(bitrate: estimates.sendRateBps, rttMs: (estimates.smoothedRTTMicros + 500) / 1000)
        let now = session.clock.now()
        if shouldSend(report, now: now) {
            session.write(stream, Bytes(report.encoded()), fin: false)
            last = report
            lastSentAt = now
        }
        let box = WeakReference(self)
        timer = session.scheduler.schedule(after: Self.pollInterval) { box.value?.tick() }
    }

    /// A bitrate change smaller than this is not news. On an idle connection the send rate is
    /// these reports and the ACKs they draw (a few kbit/s, alternating as ngtcp2 adds a PING to
    /// every other ACK-only packet of the peer's): reporting that would be reported again, ten times
    /// a second, and hold an idle session open past its idle timeout (a quiet moqsrc did, 60 s).
    static let minBitrateChange: UInt64 = 16_000
    /// The report carries whole milliseconds: a 1 ms step is rounding.
    static let minRTTChangeMs: UInt64 = 2

    private func shouldSend(_ report: Probe, now: UInt64) -> Bool {
        guard let last else { return true }
        if now &- lastSentAt >= Self.refreshNanos { return true }
        func moved(_ a: UInt64, _ b: UInt64, atLeast floor: UInt64) -> Bool {
            let (lo, hi) = (min(a, b), max(a, b))
            return hi - lo >= max(floor, hi / 4)
        }
        return moved(report.bitrate, last.bitrate, atLeast: Self.minBitrateChange)
            || moved(report.rttMs, last.rttMs, atLeast: Self.minRTTChangeMs)
    }

    private func stop(_ code: StreamErrorCode?) {
        guard served.release(session) else { return }
        timer?.cancel()
        if let code {
            session.abortStream(stream, code, stopReceive: code != .cancel)
        } else {
            session.finish(stream)
        }
        session.detach(stream)
    }

    func sessionClosed() {
        served.release(session)
        timer?.cancel()
    }
}

// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback
import Synchronization

/// One `data_%u` pad of `moqsrc` (`data-tracks`): a named track outside the catalog (chat,
/// telemetry…), one buffer per frame as it came, the mirror of moqsink's data pads.
///
/// Like ``SrcPad``, a ``PadTask`` reads the subscription's cache with a bounded wait and pushes;
/// the network only fills the cache. A buffer's PTS is the frame's timestamp on the broadcast's
/// shared timeline once media has anchored it (moqsink stamps data frames with the running time, as
/// its media), so data lines up with what is shown; before that, and for tracks not in µs, buffers
/// carry no timestamp. The stream is sparse (``SideTrackPad``).
final class DataPad: SideTrackPad, @unchecked Sendable {
    /// Frames pushed (for the tests and the log).
    let frames = Atomic<UInt64>(0)

    init(pad: UnsafeMutablePointer<GstPad>, name: String, trackName: String, src: MoqSrc) {
        super.init(pad: pad, name: name, trackName: trackName, caps: MoqSrcType.dataCaps, raw: true, src: src)
    }

    override func step(_ src: MoqSrc, generation: UInt64) {
        guard prepareStep(src), let reader else {
            wake.wait(since: generation, timeoutNs: 50_000_000)
            return
        }
        switch reader.next(waitingUpTo: 100_000_000) {
        case .idle, .malformed: break
        case .ended: trackEnded()
        case .failed(let error):
            if case .cancelled = error { return }
            src.reporter.log(GST_LEVEL_INFO, "\(name): data track \(trackName) ended: \(error)")
            dropSubscription()
        case .frame(let frame):
            push(frame, src: src)
        }
    }

    private func push(_ frame: MediaFrame, src: MoqSrc) {
        let bytes = frame.payload
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return }
        if bytes.count > 0 {
            _ = bytes.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize(bytes.count)) }
        }
        if remote?.track.info?.timescale == 1_000_000,
            let pts = src.playout?.runningTime(ofUs: frame.timestampUs, epoch: source?.epoch)
        {
            swiftmoq_buffer_set_pts(buffer, StreamEvents.pts(running: Int64(clamping: pts)))
        }
        if discont {
            swiftmoq_buffer_set_flags(buffer, GST_BUFFER_FLAG_DISCONT.rawValue)
            discont = false
        }
        frames.add(1, ordering: .relaxed)
        push(buffer, src: src)
    }
}

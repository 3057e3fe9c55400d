// SPDX-License-Identifier: MIT
import Foundation

/// The feedback loop of the throughput case: the subscriber writes its cumulative frame count (u64 LE)
/// into a FIFO the orchestrator made; the publisher keeps at most a window of frames unacknowledged.
/// So the publisher writes "as fast as delivery allows" and nothing is ever dropped for being stale.
final class AckReader {
    private let fd: Int32
    private var pending: [UInt8] = []
    /// Frames the subscriber has acknowledged so far.
    private(set) var acknowledged: UInt64 = 0

    /// Opens the FIFO read-write (on Linux this never blocks, and reads wait for data rather than EOF).
    init(path: String) throws(BenchError) {
        fd = open(path, O_RDWR)
        guard fd >= 0 else { throw .runtime("cannot open the ack FIFO \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Waits until at least `count` frames are acknowledged; false after `timeout` ns without progress.
    func wait(untilAcknowledged count: UInt64, timeout: UInt64) -> Bool {
        var lastProgress = Monotonic.now()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while acknowledged < count {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready > 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    pending.append(contentsOf: buffer[0..<n])
                    consumeCompleteValues()
                    lastProgress = Monotonic.now()
                }
            }
            if Monotonic.now() - lastProgress > timeout { return false }
        }
        return true
    }

    private func consumeCompleteValues() {
        let whole = pending.count / 8 * 8
        guard whole > 0 else { return }
        let value = pending[(whole - 8)..<whole].withUnsafeBytes {
            UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
        }
        acknowledged = max(acknowledged, value)
        pending.removeFirst(whole)
    }
}

/// The subscriber's end of the feedback FIFO.
final class AckWriter: @unchecked Sendable {
    private let fd: Int32

    /// Opens the FIFO for writing (the publisher holds it open read-write, so this does not block).
    init(path: String) throws(BenchError) {
        fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw .runtime("cannot open the ack FIFO \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Acknowledges `count` frames (cumulative). A full FIFO (a publisher that stopped reading) is ignored.
    func acknowledge(_ count: UInt64) {
        var value = count.littleEndian
        _ = withUnsafeBytes(of: &value) { write(fd, $0.baseAddress, 8) }
    }
}

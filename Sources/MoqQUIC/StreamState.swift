// SPDX-License-Identifier: MIT
// Per-stream state: the send buffer of `Bytes` chunks that ngtcp2 points into until the peer acknowledges
// them (ngtcp2 never copies stream data), plus the receive-side bookkeeping for credit.
internal import CNgtcp2
import MoqBase

/// Bytes written to a connection's streams and not yet handed to ngtcp2, kept as a running
/// total so that asking costs O(1) whatever the number of streams. Loop thread only.
final class UnsentTotal {
    var bytes = 0
}

/// One stream's state. Loop thread only.
final class StreamState {
    let id: Int64
    /// Opened by the peer (its MAX_STREAMS credit is returned when it closes).
    let peerInitiated: Bool
    /// Send order: higher is sent first.
    var order: Int64 = 0
    /// FIFO tie-break among equal orders: when the stream was created.
    let sequence: UInt64

    // MARK: Send side
    private var chunks: [Bytes] = []
    /// Index of the first chunk not yet fully acknowledged.
    private var head = 0
    /// Absolute stream offset of `chunks[head]`.
    private var headOffset: UInt64 = 0
    /// Index and absolute offset of the chunk that contains `sentOffset`.
    private var cursor = 0
    private var cursorOffset: UInt64 = 0
    /// Everything below is acknowledged.
    private(set) var ackedOffset: UInt64 = 0
    /// Everything below has been handed to ngtcp2.
    private(set) var sentOffset: UInt64 = 0
    /// Everything below has been queued by the application.
    private(set) var queuedEnd: UInt64 = 0
    /// FIN queued after `queuedEnd`.
    var finQueued = false
    /// FIN handed to ngtcp2.
    var finSent = false
    /// The send side was reset (by us) or stopped (by the peer): writes are dropped.
    var sendClosed = false
    /// Stream-level flow control blocked; cleared by the extend_max_stream_data callback.
    var blocked = false

    // MARK: Receive side
    /// Any data (or FIN) was delivered to the application.
    var delivered = false

    /// The connection's running total of unsent bytes, kept up to date by this stream.
    private let total: UnsentTotal

    init(id: Int64, peerInitiated: Bool, sequence: UInt64, total: UnsentTotal) {
        self.id = id
        self.peerInitiated = peerInitiated
        self.sequence = sequence
        self.total = total
    }

    /// Unsent data or an unsent FIN, and not blocked.
    var wantsToSend: Bool {
        !sendClosed && !blocked && (sentOffset < queuedEnd || (finQueued && !finSent))
    }

    /// Written but not yet acknowledged.
    var unacknowledged: Int { Int(queuedEnd - ackedOffset) }

    /// Written but not yet handed to ngtcp2 (queued behind congestion or flow control).
    var unsent: Int { sendClosed ? 0 : Int(queuedEnd - sentOffset) }

    func append(_ data: Bytes) {
        guard !data.isEmpty, !sendClosed, !finQueued else { return }
        chunks.append(data)
        queuedEnd += UInt64(data.count)
        total.bytes += data.count
    }

    /// Fills `vecs` with up to `vecs.count` pieces starting at `sentOffset`; returns (count, bytes, reachesEnd).
    func gather(into vecs: UnsafeMutableBufferPointer<ngtcp2_vec>) -> (count: Int, bytes: Int, reachesEnd: Bool) {
        var n = 0
        var total = 0
        var index = cursor
        var offset = cursorOffset
        while n < vecs.count && index < chunks.count {
            let chunk = chunks[index]
            let skip = sentOffset > offset ? Int(sentOffset - offset) : 0
            if skip < chunk.count {
                chunk.withUnsafeBytes { raw in
                    // Stable address: the storage lives as long as `chunks` holds the view (until acknowledged).
                    vecs[n] = ngtcp2_vec(
                        base: UnsafeMutablePointer(
                            mutating: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + skip),
                        len: chunk.count - skip)
                }
                n += 1
                total += chunk.count - skip
            }
            offset += UInt64(chunk.count)
            index += 1
        }
        return (n, total, index >= chunks.count)
    }

    /// Records that ngtcp2 took `count` more bytes (and the FIN if `fin`).
    func didSend(_ count: Int, fin: Bool) {
        sentOffset += UInt64(count)
        total.bytes -= count
        while cursor < chunks.count && cursorOffset + UInt64(chunks[cursor].count) <= sentOffset {
            cursorOffset += UInt64(chunks[cursor].count)
            cursor += 1
        }
        if fin { finSent = true }
    }

    /// Releases chunks below `offset` (acked_stream_data_offset is called in increasing order).
    func acknowledge(upTo offset: UInt64) {
        if offset <= ackedOffset { return }
        ackedOffset = offset
        while head < chunks.count && headOffset + UInt64(chunks[head].count) <= ackedOffset && head < cursor {
            headOffset += UInt64(chunks[head].count)
            chunks[head] = Bytes()
            head += 1
        }
        if head > 32 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            cursor -= head
            head = 0
        }
    }

    /// Drops everything queued (reset, stop-sending, close).
    func dropSendBuffer() {
        total.bytes -= unsent
        chunks.removeAll()
        head = 0
        cursor = 0
        headOffset = queuedEnd
        cursorOffset = queuedEnd
        ackedOffset = queuedEnd
        sentOffset = queuedEnd
        sendClosed = true
    }
}

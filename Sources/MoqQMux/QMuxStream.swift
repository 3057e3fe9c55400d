// SPDX-License-Identifier: MIT
import MoqBase

/// One stream of a ``QMuxConnection``: a send half, a receive half, or both (bidirectional).
struct QMuxStream {
    /// Our side of a stream we send on.
    struct Send {
        /// Written and not transmitted yet, oldest first.
        var queue: [Bytes] = []
        /// Bytes in ``queue``.
        var queued = 0
        /// The offset of the next byte transmitted (= bytes transmitted).
        var offset: UInt64 = 0
        /// How far the peer lets us send (MAX_STREAM_DATA).
        var limit: UInt64
        /// `finish` was called: FIN follows the queued bytes.
        var finQueued = false
        /// Done: FIN or RESET_STREAM transmitted.
        var done = false
        /// Higher orders go first.
        var order: Int64 = 0

        /// Bytes the next STREAM frame may carry, given the connection's credit left.
        func sendable(connectionCredit: UInt64) -> Int {
            guard !done else { return 0 }
            let credit = min(limit &- min(limit, offset), connectionCredit)
            return Int(min(UInt64(queued), credit))
        }

        /// Whether a STREAM frame is due: data with credit, or a FIN after the last byte.
        func hasWork(connectionCredit: UInt64) -> Bool {
            !done && (sendable(connectionCredit: connectionCredit) > 0 || (finQueued && queued == 0))
        }
    }

    /// Our side of a stream we receive on.
    struct Receive {
        /// Bytes received (the offset the next STREAM frame must start at).
        var received: UInt64 = 0
        /// Bytes the layer above is done with.
        var consumed: UInt64 = 0
        /// How far the peer may send (what we advertised).
        var limit: UInt64
        /// The window we keep ahead of ``consumed``.
        let window: UInt64
        /// The stream's final size, once FIN or RESET_STREAM told it.
        var finalSize: UInt64?
        /// Done: FIN delivered, reset by the peer, or we asked it to stop.
        var done = false

        /// Nothing more can arrive: done, and the final size is known (after STOP_SENDING the
        /// half stays until the peer's FIN or RESET_STREAM says it, so its bytes are credited).
        var isFinished: Bool { done && finalSize != nil }
    }

    let id: Int64
    var send: Send?
    var receive: Receive?
    /// The layer above heard of it (peer streams: at their first frame).
    var announced: Bool

    /// Both halves are done.
    var isFinished: Bool { (send?.done ?? true) && (receive?.isFinished ?? true) }
}

/// Stream ids as QUIC numbers them (RFC 9000 §2.1): the low bits say who opened it and its kind.
enum QMuxStreamID {
    static func make(index: UInt64, bidirectional: Bool, byClient: Bool) -> Int64 {
        Int64(index << 2) | (bidirectional ? 0 : 0x2) | (byClient ? 0 : 0x1)
    }
    static func index(_ id: Int64) -> UInt64 { UInt64(id) >> 2 }
    static func isBidirectional(_ id: Int64) -> Bool { id & 0x2 == 0 }
    static func isClientInitiated(_ id: Int64) -> Bool { id & 0x1 == 0 }
}

// SPDX-License-Identifier: MIT

/// The per-stream state machines of a session implement this. All calls happen
/// on the session thread.
protocol StreamHandler: AnyObject {
    /// Bytes arrived on the stream; `fin` marks the peer's end of it.
    func received(_ data: UnsafeRawBufferPointer, fin: Bool)
    /// The peer reset its send side (raw wire code).
    func peerReset(wireCode: UInt64)
    /// The peer asked us to stop sending (raw wire code).
    func peerStopSending(wireCode: UInt64)
    /// The session is closing: release everything, write nothing.
    func sessionClosed()
    /// Bytes received on the stream and still held (incomplete messages, a frame being
    /// assembled). The session counts them against ``SessionLimits/maxIncomingBytes``.
    var bufferedBytes: Int { get }
    /// True when held bytes keep their flow-control credit until released (control
    /// streams: a peer cannot make us hold more than the connection window); false when
    /// credit is returned on arrival (frames under assembly, which may be larger than a
    /// stream window and are bounded by the session's budget instead).
    var holdsCredit: Bool { get }
    /// Groups this handler still has to send or holds queued for sending (the session's
    /// back-pressure count, ``SessionCore/activeServedGroups``).
    var pendingGroups: Int { get }
    /// The SETUP exchange completed: a request that arrived before it may now be dispatched.
    func sessionReady()
}

extension StreamHandler {
    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {}
    func peerReset(wireCode: UInt64) {}
    func peerStopSending(wireCode: UInt64) {}
    var bufferedBytes: Int { 0 }
    var holdsCredit: Bool { true }
    var pendingGroups: Int { 0 }
    func sessionReady() {}
}

/// Send orders: control streams above all media; media by subscriber priority,
/// then older subscription first, then newest group first (moq-lite §5).
enum SendOrder {
    static let control: Int64 = Int64.max - 1

    static func group(priority: UInt8, subscribeID: UInt64, sequence: UInt64) -> Int64 {
        let sub = Int64(min(subscribeID, (1 << 20) - 1))
        let seq = Int64(min(sequence, (1 << 32) - 1))
        return Int64(priority) << 52 | ((1 << 20) - 1 - sub) << 32 | seq
    }
}

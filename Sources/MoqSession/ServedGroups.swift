// SPDX-License-Identifier: MIT
import MoqWire

/// SUBSCRIBE_DROP runs being collected during one pump: consecutive sequences with the
/// same code become one message.
struct DropRuns {
    struct Run: Equatable {
        var start: UInt64
        var end: UInt64
        var code: StreamErrorCode
    }

    private var runs: [Run] = []

    mutating func add(_ sequence: UInt64, code: StreamErrorCode) { add(range: sequence...sequence, code: code) }

    mutating func add(range: ClosedRange<UInt64>, code: StreamErrorCode) {
        if var last = runs.last, last.code == code, last.end < UInt64.max, last.end + 1 == range.lowerBound {
            last.end = range.upperBound
            runs[runs.count - 1] = last
        } else {
            runs.append(Run(start: range.lowerBound, end: range.upperBound, code: code))
        }
    }

    /// The runs, in the order they were added; empties the collection.
    mutating func take() -> [Run] {
        defer { runs = [] }
        return runs
    }
}

/// The handler of an outgoing group stream: reacts to STOP_SENDING.
final class GroupWriter: StreamHandler {
    weak var owner: ServedSubscription?
    let send: ServedSubscription.GroupSend

    init(owner: ServedSubscription, send: ServedSubscription.GroupSend) {
        self.owner = owner
        self.send = send
    }

    func peerStopSending(wireCode: UInt64) {
        guard !send.isClosed else { return }
        // After FIN, a raw (unmapped) code is the Rust stack's noise; otherwise the subscriber skipped the group.
        if send.finWritten && StreamErrorCode(wireValue: wireCode) == nil { return }
        owner?.groupStopped(send)
    }

    /// One group until its FIN is written or the stream closed.
    var pendingGroups: Int { send.isClosed || send.finWritten ? 0 : 1 }

    func sessionClosed() {}
}

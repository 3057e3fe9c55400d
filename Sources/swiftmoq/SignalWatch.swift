// SPDX-License-Identifier: MIT
import Dispatch
import Foundation

/// Catches a set of signals from the moment it is made, so that a signal arriving right after
/// the program says it is ready is not left to the default action (which would kill it).
final class SignalWatch: @unchecked Sendable {  // state under `lock`
    private let lock = NSLock()
    private var sources: [any DispatchSourceSignal] = []
    private var fired: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?

    init(_ signals: [Int32]) {
        for sig in signals {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.fire(sig) }
            source.resume()
            sources.append(source)
        }
    }

    deinit { for source in sources { source.cancel() } }

    /// The first signal caught (at once if one already was).
    func next() async -> Int32 {
        await withCheckedContinuation { continuation in
            let sig = lock.withLock { () -> Int32? in
                if let fired { return fired }
                waiter = continuation
                return nil
            }
            if let sig { continuation.resume(returning: sig) }
        }
    }

    private func fire(_ sig: Int32) {
        let waiter = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
            if fired == nil { fired = sig }
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(returning: sig)
    }
}

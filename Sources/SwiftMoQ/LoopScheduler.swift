// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqSession
import MoqSync

/// Runs session cores on a QUIC event loop thread.
struct LoopScheduler: SessionScheduler {
    let loop: QUICEventLoop
    let clock: any MoqClock = SystemClock()

    func execute(_ work: @escaping @Sendable () -> Void) { loop.execute(work) }

    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any Cancellable {
        TimerHandle(timer: loop.schedule(after: delay, work))
    }

    struct TimerHandle: Cancellable {
        let timer: QUICTimer
        func cancel() { timer.cancel() }
    }
}

/// The process-wide event loop used by client sessions (one thread for all of them).
enum SharedLoop {
    private static let loop = Lock<QUICEventLoop?>(nil)

    static func get() throws(MoqError) -> QUICEventLoop {
        let result = loop.withLock { current -> Result<QUICEventLoop, MoqError> in
            if let current { return .success(current) }
            do {
                let created = try QUICEventLoop(name: "swiftmoq-client")
                current = created
                return .success(created)
            } catch {
                return .failure(.configuration("cannot start the network thread: \(error)"))
            }
        }
        return try result.get()
    }
}

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

/// The process-wide event loops of client sessions: one thread for all of them unless
/// ``MoqSession/clientNetworkThreads`` asks for more, in which case each new session goes to the
/// next loop in turn (a process holding hundreds of sessions, such as a load generator, spreads
/// their reading over several cores).
enum SharedLoop {
    private struct State {
        var loops: [QUICEventLoop] = []
        var wanted = 1
        var next = 0
    }

    private static let state = Lock(State())

    /// How many loops new sessions spread over.
    static var threads: Int {
        get { state.withLock { $0.wanted } }
        set { state.withLock { $0.wanted = max(1, min(newValue, 64)) } }
    }

    static func get() throws(MoqError) -> QUICEventLoop {
        let result = state.withLock { s -> Result<QUICEventLoop, MoqError> in
            let index = s.next % s.wanted
            s.next = (s.next + 1) % s.wanted
            if index < s.loops.count { return .success(s.loops[index]) }
            do {
                let name = s.wanted > 1 ? "swiftmoq-cli-\(s.loops.count)" : "swiftmoq-client"
                let created = try QUICEventLoop(name: name)
                s.loops.append(created)
                return .success(created)
            } catch {
                return .failure(.configuration("cannot start the network thread: \(error)"))
            }
        }
        return try result.get()
    }
}

// SPDX-License-Identifier: MIT
import MoqSync

/// An unbounded FIFO between a producer task and one reader that waits with a timeout. The timeout is a
/// sleeping task, so waiting holds no thread.
final class AsyncQueue<Value: Sendable>: Sendable {
    private typealias Waiter = CheckedContinuation<Result<Value?, TestKitError>, Never>

    private struct State {
        var items: [Value] = []
        var head = 0
        var end: Result<Void, TestKitError>?
        var waiter: (id: UInt64, continuation: Waiter, timer: Task<Void, Never>?)?
        var nextID: UInt64 = 0
    }

    private let state = Lock(State())

    /// Adds a value (ignored after ``finish(_:)``).
    func push(_ value: Value) {
        let waiter: Waiter? = state.withLock { s in
            guard s.end == nil else { return nil }
            if let w = s.waiter {
                s.waiter = nil
                w.timer?.cancel()
                return w.continuation
            }
            s.items.append(value)
            return nil
        }
        waiter?.resume(returning: .success(value))
    }

    /// Ends the queue: once the values are read, ``next(timeout:what:)`` returns nil, or throws `error`.
    func finish(_ end: Result<Void, TestKitError> = .success(())) {
        let waiter: Waiter? = state.withLock { s in
            guard s.end == nil else { return nil }
            s.end = end
            guard let w = s.waiter else { return nil }
            s.waiter = nil
            w.timer?.cancel()
            return w.continuation
        }
        if let waiter {
            switch end {
            case .success: waiter.resume(returning: .success(nil))
            case .failure(let e): waiter.resume(returning: .failure(e))
            }
        }
    }

    /// The next value; nil once the queue finished and is empty. One reader at a time.
    func next(timeout: Duration, what: String) async throws(TestKitError) -> Value? {
        let result: Result<Value?, TestKitError> = await withCheckedContinuation { continuation in
            let ready: Result<Value?, TestKitError>? = state.withLock { s in
                if s.head < s.items.count {
                    let v = s.items[s.head]
                    s.head += 1
                    if s.head > 1024, s.head * 2 > s.items.count {
                        s.items.removeFirst(s.head)
                        s.head = 0
                    }
                    return .success(v)
                }
                if let end = s.end { return end.map { nil } }
                precondition(s.waiter == nil, "AsyncQueue has one reader at a time")
                s.nextID += 1
                s.waiter = (s.nextID, continuation, nil)
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            let id = state.withLock { $0.nextID }
            let timer = Task { [weak self] in
                do { try await Task.sleep(for: timeout) } catch { return }
                self?.expire(id, what: what)
            }
            state.withLock { s in
                if s.waiter?.id == id { s.waiter?.timer = timer } else { timer.cancel() }
            }
        }
        return try result.get()
    }

    private func expire(_ id: UInt64, what: String) {
        let waiter: Waiter? = state.withLock { s in
            guard let w = s.waiter, w.id == id else { return nil }
            s.waiter = nil
            return w.continuation
        }
        waiter?.resume(returning: .failure(.timedOut(what)))
    }
}

// SPDX-License-Identifier: MIT
import MoqSync

/// Tasks waiting for one value that comes once (a session's end, its GOAWAY), each of which can
/// stop waiting on its own when its task is cancelled. Kept inside the caller's lock.
struct CancellableWaiters<Value: Sendable> {
    private var next: UInt64 = 0
    private var waiting: [UInt64: CheckedContinuation<Value?, Never>] = [:]
    /// Waiters cancelled before they registered (the handler can run first).
    private var cancelledEarly: Set<UInt64> = []

    /// An id for one wait.
    mutating func makeID() -> UInt64 {
        next &+= 1
        return next
    }

    /// Registers `continuation`; false when its wait was cancelled already (the caller resumes it with nil).
    mutating func add(_ id: UInt64, _ continuation: CheckedContinuation<Value?, Never>) -> Bool {
        if cancelledEarly.remove(id) != nil { return false }
        waiting[id] = continuation
        return true
    }

    /// The wait `id` was cancelled: its continuation to resume with nil, if it had registered.
    mutating func cancel(_ id: UInt64) -> CheckedContinuation<Value?, Never>? {
        if let continuation = waiting.removeValue(forKey: id) { return continuation }
        cancelledEarly.insert(id)
        return nil
    }

    /// Every registered continuation, to resume with the value (the list is emptied).
    mutating func takeAll() -> [CheckedContinuation<Value?, Never>] {
        defer {
            waiting = [:]
            cancelledEarly = []
        }
        return Array(waiting.values)
    }
}

/// Waits until `ready` finds the value in the state `lock` holds, registered meanwhile in the
/// waiters at `waiters` (whoever produces the value resumes them with it).
/// - Throws: `CancellationError` when the task is cancelled first.
func waitCancellably<State, Value: Sendable>(
    _ lock: Lock<State>, _ waiters: any WritableKeyPath<State, CancellableWaiters<Value>> & Sendable,
    ready: @escaping @Sendable (State) -> Value?
) async throws(CancellationError) -> Value {
    let id = lock.withLock { $0[keyPath: waiters].makeID() }
    let value: Value? = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let now = lock.withLock { state -> Value?? in
                if let value = ready(state) { return .some(value) }
                return state[keyPath: waiters].add(id, continuation) ? nil : .some(nil)
            }
            if let now { continuation.resume(returning: now) }
        }
    } onCancel: {
        lock.withLock { $0[keyPath: waiters].cancel(id) }?.resume(returning: nil)
    }
    guard let value else { throw CancellationError() }
    return value
}

/// Waits for a callback-style answer, or throws `CancellationError` when the task is cancelled
/// first (the late answer is then dropped).
func answer<Value: Sendable>(
    _ ask: (@escaping @Sendable (Value) -> Void) -> Void
) async throws(CancellationError) -> Value {
    let slot = Lock<(continuation: CheckedContinuation<Value?, Never>?, done: Bool)>((nil, false))
    let finish: @Sendable (Value?) -> Void = { value in
        let continuation = slot.withLock { s -> CheckedContinuation<Value?, Never>? in
            guard !s.done else { return nil }
            s.done = true
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume(returning: value)
    }
    let value: Value? = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let early = slot.withLock { s -> Bool in
                if s.done { return true }
                s.continuation = continuation
                return false
            }
            if early { return continuation.resume(returning: nil) }
            ask { finish($0) }
        }
    } onCancel: {
        finish(nil)
    }
    guard let value else { throw CancellationError() }
    return value
}

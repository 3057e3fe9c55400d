// SPDX-License-Identifier: MIT
import MoqSync

/// A pipeline's bus messages in Swift: the history of the current run, live streams of it, and tasks
/// waiting for a message. Fed by the ``BusReader`` thread; nothing here blocks.
///
/// Timeouts are sleeping tasks that resolve the waiter, so a wait never occupies a thread of the
/// cooperative pool.
final class MessageHub: Sendable {
    /// Messages kept per run; the oldest go first beyond this (and are counted in ``droppedCount``).
    static let historyLimit = 10_000

    private struct Waiter: Sendable {
        let after: UInt64
        let failOnError: Bool
        let match: @Sendable (BusMessage) -> Bool
        let continuation: CheckedContinuation<Result<BusMessage, PipelineError>, Never>
        var timer: Task<Void, Never>?
    }

    private struct State: Sendable {
        var history: [(sequence: UInt64, message: BusMessage)] = []
        var sequence: UInt64 = 0
        var dropped = 0
        var running = false
        var nextID: UInt64 = 0
        var subscribers: [UInt64: AsyncStream<BusMessage>.Continuation] = [:]
        var waiters: [UInt64: Waiter] = [:]
        /// Waits whose id exists but which are not registered yet, and those cancelled in between.
        var pending: Set<UInt64> = []
        var cancelledEarly: Set<UInt64> = []
    }

    private let state = Lock(State())

    // MARK: Runs

    /// A run starts: the history is cleared.
    func begin() {
        state.withLock { s in
            s.history.removeAll()
            s.dropped = 0
            s.running = true
        }
    }

    /// The run ended: streams finish and waits fail with ``PipelineError/notRunning``.
    func end() {
        let (subscribers, waiters) = state.withLock { s in
            s.running = false
            let subscribers = Array(s.subscribers.values)
            let waiters = Array(s.waiters.values)
            s.subscribers.removeAll()
            s.waiters.removeAll()
            return (subscribers, waiters)
        }
        for c in subscribers { c.finish() }
        for w in waiters {
            w.timer?.cancel()
            w.continuation.resume(returning: .failure(.notRunning))
        }
    }

    /// A message from the bus. Called from the ``BusReader`` thread only, so messages reach every
    /// stream in bus order although they are yielded outside the lock.
    ///
    /// Nothing is yielded or resumed under the lock: a task being cancelled holds its status lock
    /// while it runs a stream's termination handler, and yielding to that task needs the same
    /// status lock, so a handler that took this lock while `post` yielded under it would deadlock
    /// (it did: `Player.stop()` cancelling a task that read `messages`).
    func post(_ message: BusMessage) {
        let (subscribers, waiters) = state.withLock { s in
            s.sequence += 1
            s.history.append((s.sequence, message))
            if s.history.count > Self.historyLimit {
                let excess = s.history.count - Self.historyLimit + Self.historyLimit / 10
                s.history.removeFirst(excess)
                s.dropped += excess
            }
            return (Array(s.subscribers), Array(s.waiters))
        }
        // Matchers run outside the lock (they may read the history); a waiter registering meanwhile
        // sees this message in the history (``register(_:_:label:timeout:)`` rechecks before it
        // joins), and one resolved meanwhile by its timer or cancellation is no longer there below.
        let matched = waiters.compactMap { id, w in Self.outcome(message, for: w).map { (id, $0) } }
        let resolved: [(Waiter, Result<BusMessage, PipelineError>)] =
            matched.isEmpty
            ? []
            : state.withLock { s in
                matched.compactMap { id, result in s.waiters.removeValue(forKey: id).map { ($0, result) } }
            }
        var terminated: [UInt64] = []
        for (id, c) in subscribers {
            if case .terminated = c.yield(message) { terminated.append(id) }
        }
        if !terminated.isEmpty {
            state.withLock { s in for id in terminated { s.subscribers[id] = nil } }
        }
        for (w, result) in resolved {
            w.timer?.cancel()
            w.continuation.resume(returning: result)
        }
    }

    private static func outcome(_ m: BusMessage, for w: Waiter) -> Result<BusMessage, PipelineError>? {
        if w.match(m) { return .success(m) }
        if w.failOnError, m.isError { return .failure(.failed(m.description)) }
        return nil
    }

    // MARK: Reading

    /// The messages of the current (or last) run, oldest first.
    var messages: [BusMessage] { state.withLock { $0.history.map(\.message) } }

    /// How many messages of this run were dropped from the history (beyond ``historyLimit``).
    var droppedCount: Int { state.withLock { $0.dropped } }

    /// The sequence number of the newest message (0 before any).
    var lastSequence: UInt64 { state.withLock { $0.sequence } }

    /// The messages of the current run, from its first, then live until the run ends (or, when idle,
    /// those of the next run).
    ///
    /// A stream that ends is forgotten at the next message (``post(_:)``): its termination handler
    /// takes no lock (see ``post(_:)`` for why).
    func stream() -> AsyncStream<BusMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: BusMessage.self)
        state.withLock { s in
            s.nextID += 1
            // Nobody reads this stream yet (it has not been returned), so yielding here wakes no
            // task; it keeps the history and the live messages in one order.
            if s.running {
                for entry in s.history { continuation.yield(entry.message) }
            }
            s.subscribers[s.nextID] = continuation
        }
        return stream
    }

    /// Waits for a message that `match`es among those after `sequence` (the history included) and those
    /// still to come. An ERROR ends the wait with ``PipelineError/failed(_:)`` unless `match` accepts
    /// it or `failOnError` is false.
    func wait(
        for label: String, after sequence: UInt64 = 0, timeout: Duration, failOnError: Bool = true,
        _ match: @escaping @Sendable (BusMessage) -> Bool
    ) async throws(PipelineError) -> BusMessage {
        let id: UInt64 = state.withLock { s in
            s.nextID += 1
            s.pending.insert(s.nextID)
            return s.nextID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                register(
                    id, Waiter(after: sequence, failOnError: failOnError, match: match, continuation: continuation),
                    label: label, timeout: timeout)
            }
        } onCancel: {
            resolve(id, .failure(.cancelled))
        }
        return try result.get()
    }

    /// What one look at the state decided for a waiter that is registering.
    private enum Registration {
        /// Messages it has not seen yet, to match outside the lock.
        case check([(sequence: UInt64, message: BusMessage)])
        case done(Result<BusMessage, PipelineError>)
        case registered
    }

    private func register(_ id: UInt64, _ waiter: Waiter, label: String, timeout: Duration) {
        var seen = waiter.after
        registering: while true {
            let step: Registration = state.withLock { s in
                if s.cancelledEarly.remove(id) != nil {
                    s.pending.remove(id)
                    return .done(.failure(.cancelled))
                }
                let fresh = s.history.filter { $0.sequence > seen }
                if !fresh.isEmpty { return .check(fresh) }
                s.pending.remove(id)
                if !s.running { return .done(.failure(.notRunning)) }
                s.waiters[id] = waiter
                return .registered
            }
            switch step {
            case .registered:
                break registering
            case .done(let result):
                waiter.continuation.resume(returning: result)
                return
            case .check(let fresh):
                // The matcher runs outside the lock; messages posted meanwhile are checked on the
                // next pass, before the waiter joins the list `post` matches against.
                for entry in fresh {
                    guard let result = Self.outcome(entry.message, for: waiter) else { continue }
                    state.withLock { s in
                        s.pending.remove(id)
                        s.cancelledEarly.remove(id)
                    }
                    waiter.continuation.resume(returning: result)
                    return
                }
                seen = fresh.last?.sequence ?? seen
            }
        }
        let timer = Task { [weak self] in
            do { try await Task.sleep(for: timeout) } catch { return }
            self?.resolve(id, .failure(.timedOut(label)))
        }
        let stillWaiting = state.withLock { s in
            guard s.waiters[id] != nil else { return false }
            s.waiters[id]?.timer = timer
            return true
        }
        if !stillWaiting { timer.cancel() }
    }

    private func resolve(_ id: UInt64, _ result: Result<BusMessage, PipelineError>) {
        let waiter: Waiter? = state.withLock { s in
            if let w = s.waiters.removeValue(forKey: id) { return w }
            if s.pending.remove(id) != nil { s.cancelledEarly.insert(id) }
            return nil
        }
        guard let waiter else { return }
        waiter.timer?.cancel()
        waiter.continuation.resume(returning: result)
    }
}
